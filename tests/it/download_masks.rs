//! A latitude/longitude box on a projected grid of integers without `_FillValue`
//! (`tests/fixtures/downloads/projections.zarr`, `ps_i16` and `ps_u8`, polar stereographic):
//! the cells of its index box outside the box are marked with a value the cells inside do
//! not hold, declared as the NetCDF `_FillValue` and the GeoTIFF nodata; every other cell is
//! the stored value. Which cells lie outside is pyproj's answer (`.ci/downloads.sh` checks it
//! cell by cell with xarray and rasterio); the counts here are from it.

#![allow(clippy::unwrap_used)] // exact expected values

use std::io::Cursor;

use netcdf3::FileReader;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::tags::Tag;

use crate::common;

const BOX: &str = "sel=lat:84..88,lon:-40..40";
/// The index box of the cells whose centre lies in `BOX` (pyproj): rows 78..=99, columns
/// 28..=92, of which 469 lie outside the box.
const INDICES: &str = "s=78:100,28:93";
const OUTSIDE: usize = 469;

fn app() -> axum::Router {
    let store = common::local_store(&common::fixtures().join("downloads/projections.zarr"));
    common::app_with(vec![("proj", store)], common::config(""))
}

fn netcdf_i16(body: &[u8]) -> (Vec<i16>, Option<Vec<i16>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("download.nc");
    std::fs::write(&path, body).unwrap();
    let mut file = FileReader::open(&path).unwrap();
    let fill = file.data_set().get_var_attr_i16("v", "_FillValue").map(<[i16]>::to_vec);
    (file.read_var_i16("v").unwrap(), fill)
}

/// The pixels of a one-band GeoTIFF and its nodata text.
fn tiff_u8(body: &[u8]) -> (Vec<u8>, String) {
    let mut decoder = Decoder::new(Cursor::new(body.to_vec())).unwrap();
    let nodata = decoder.get_tag_ascii_string(Tag::Unknown(42113)).unwrap().trim_end_matches('\0').to_owned();
    let DecodingResult::U8(pixels) = decoder.read_image().unwrap() else { panic!("not uint8") };
    (pixels, nodata)
}

/// `got` is `stored` with `OUTSIDE` cells set to `fill`, and keeps the values 0 and
/// `held` (the Zarr fill and NetCDF's default one, which the box's cells hold).
fn marked<T: PartialEq + Copy + std::fmt::Debug>(got: &[T], stored: &[T], fill: T, held: [T; 2]) {
    assert_eq!(got.len(), stored.len());
    assert!(!stored.contains(&fill), "{fill:?} is a value of the box");
    for (i, (g, s)) in got.iter().zip(stored).enumerate() {
        assert!(g == s || *g == fill, "[{i}]: {g:?}, stored {s:?}");
    }
    assert_eq!(got.iter().filter(|g| **g == fill).count(), OUTSIDE);
    for value in held {
        assert!(got.contains(&value), "{value:?} inside the box stays itself");
    }
}

#[tokio::test]
async fn a_box_on_a_projected_integer_grid_marks_its_outside_with_a_value_the_data_lacks() {
    let app = app();
    // NetCDF, int16: 0 and -32767 are held inside, 32767 (the largest free value) is not.
    let reply = common::browser_get(&app, &format!("/v1/slice/proj/ps_i16/v?{BOX}&format=nc")).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let (got, fill) = netcdf_i16(&reply.body);
    assert_eq!(fill, Some(vec![32767]), "the value of the cells outside is declared");
    let plain = common::browser_get(&app, &format!("/v1/slice/proj/ps_i16/v?{INDICES}&format=nc")).await;
    let (stored, no_fill) = netcdf_i16(&plain.body);
    assert_eq!(no_fill, None, "nothing is marked missing by indices: no fill is declared");
    marked(&got, &stored, 32767, [0, -32767]);
    // GeoTIFF, uint8: 0 and 255 are held inside, 254 is not.
    let reply = common::browser_get(&app, &format!("/v1/slice/proj/ps_u8/v?{BOX}&format=tif")).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    let (got, nodata) = tiff_u8(&reply.body);
    assert_eq!(nodata, "254");
    let plain = common::browser_get(&app, &format!("/v1/slice/proj/ps_u8/v?{INDICES}&format=tif")).await;
    let (stored, zarr_fill) = tiff_u8(&plain.body);
    assert_eq!(zarr_fill, "0", "by indices, the nodata is the Zarr fill");
    marked(&got, &stored, 254, [0, 255]);
    // NetCDF of uint8 (CDF-5, which netcdf3 cannot read): made, not refused.
    let reply = common::browser_get(&app, &format!("/v1/slice/proj/ps_u8/v?{BOX}&format=nc")).await;
    assert_eq!(reply.status, 200, "{}", reply.describe());
    assert_eq!(&reply.body[..4], b"CDF\x05");
}
