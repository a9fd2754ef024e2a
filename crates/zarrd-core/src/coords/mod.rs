//! Coordinates as xarray decodes them: CF conventions on top of the stored arrays.

pub mod calendar;
pub mod cf;
pub mod labels;
pub mod sel;
