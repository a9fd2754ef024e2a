//! Coordinates as xarray decodes them: CF conventions on top of the stored arrays.

pub mod calendar;
