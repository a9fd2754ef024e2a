//! Region downloads in the files science and GIS tools open (`../shared/design/API.md`,
//! "Region downloads"): a selection of an array as a NetCDF classic file
//! ([`netcdf`], described by [`cf_file`]) streamed from the planned read, or as a Cloud
//! Optimized GeoTIFF ([`tiff`] of [`tiles`], placed by [`geotiff`]).

pub mod attributes;
pub mod cf_file;
pub mod geotiff;
pub mod netcdf;
pub mod tiff;
pub mod tiles;
