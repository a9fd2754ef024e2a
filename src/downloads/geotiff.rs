//! A region as a GeoTIFF ([`crate::downloads::tiff`]): where its pixels lie — the affine
//! transform of the cell edges from the selected cells' centres, rows north to south —
//! its GeoKeys from the grid model, and `GDAL_METADATA` (band labels, units, CF packing);
//! or why GeoTIFF cannot hold it (a 422 naming it).

use std::fmt::Write as _;

use serde_json::{Map, Value};
use zarrd_core::grid::geokeys::{GeoKeys, geokeys};
use zarrd_core::grid::native::Native;
use zarrd_core::grid::{Grid, Kind};

use crate::downloads::cf_file::Region;
use crate::downloads::tiff::Georeference;
use crate::markup::escape;

/// How far a grid's spacing may differ from cell to cell, as a fraction of a cell.
const REGULAR: f64 = 1e-6;

/// Where a region's pixels lie, and whether its rows and columns are flipped to put north
/// up and east right.
pub struct Placement {
    pub georef: Georeference,
    pub flip_rows: bool,
    pub flip_cols: bool,
}

/// The signed spacing of `centres` (one cell: `one`), when regular; `wrap` compares
/// longitudes modulo 360 (a selection across the seam of a 0..360 grid).
fn spacing(centres: &[f64], one: f64, wrap: bool, what: &str) -> Result<f64, String> {
    let step = |a: f64, b: f64| if wrap { (b - a + 180.0).rem_euclid(360.0) - 180.0 } else { b - a };
    if centres.is_empty() {
        return Err(format!("no {what} is selected"));
    }
    if centres.len() == 1 {
        return if one.is_finite() && one != 0.0 { Ok(one) } else { Err(format!("the {what} cell has no size")) };
    }
    let steps: Vec<f64> = centres.windows(2).map(|w| step(w[0], w[1])).collect();
    let mean = steps.iter().sum::<f64>() / steps.len() as f64;
    if mean == 0.0 {
        return Err(format!("its {what} centres do not advance"));
    }
    match steps.iter().position(|s| (s - mean).abs() > REGULAR * mean.abs()) {
        Some(i) => Err(format!(
            "its {what} spacing is not regular ({} after index {i}, {mean} on average); GeoTIFF's transform needs equal cells",
            steps[i]
        )),
        None => Ok(mean),
    }
}

/// The placement of pixels whose centres are at `ys` (rows) and `xs` (columns), one
/// cell `one` wide where only one is selected.
pub fn placement(
    ys: &[f64],
    xs: &[f64],
    one: (f64, f64),
    geographic: bool,
    keys: GeoKeys,
) -> Result<Placement, String> {
    let dx = spacing(xs, one.0, geographic, "x")?;
    let dy = spacing(ys, one.1, false, "y")?;
    let (x_first, y_first) = (xs[0], ys[0]);
    let (x_last, y_last) = (x_first + dx * (xs.len() - 1) as f64, y_first + dy * (ys.len() - 1) as f64);
    // The west edge of the westmost pixel, the north edge of the northmost.
    let west = x_first.min(x_last) - dx.abs() / 2.0;
    let north = y_first.max(y_last) + dy.abs() / 2.0;
    Ok(Placement {
        georef: Georeference { origin: (west, north), pixel: (dx.abs(), dy.abs()), keys },
        flip_rows: dy > 0.0,
        flip_cols: dx < 0.0,
    })
}

/// The placement of `region` of an array on `grid`: the region keeps two or three
/// dimensions, the last two the grid's (Y, X); the grid's cells are regular and north-up
/// in a CRS GeoTIFF holds.
pub fn on_grid(grid: &Grid, region: &Region) -> Result<Placement, String> {
    let kept: Vec<usize> = (0..region.dims.len()).filter(|&d| !region.dropped[d]).collect();
    if kept.len() < 2 || kept.len() > 3 || kept[kept.len() - 2..] != grid.dims {
        return Err(format!(
            "a GeoTIFF holds the grid's ({}, {}) as its last two dimensions and at most one more (the bands); this selection keeps {} dimension(s){}: select one index of the others",
            grid.names[0],
            grid.names[1],
            kept.len(),
            if kept.len() >= 2 && kept[kept.len() - 2..] != grid.dims { ", not ending in the grid's" } else { "" }
        ));
    }
    let keys = geokeys(&grid.crs)?;
    if let Native::Affine { transform, .. } = &grid.native {
        let [_, b, _, d, ..] = transform.coefficients;
        if b != 0.0 || d != 0.0 {
            return Err(
                "its transform is rotated or sheared; a GeoTIFF's pixel scale holds grids aligned with their CRS"
                    .into(),
            );
        }
    }
    if let Some(d) = kept.iter().find(|&&d| region.count(d) == 0) {
        return Err(format!("dimension {d} has length 0 in this selection: an image needs a cell"));
    }
    let (rows, cols) = (region.indices(grid.dims[0]), region.indices(grid.dims[1]));
    let (r0, c0) = (rows[0], cols[0]);
    let native = &grid.native;
    let xs: Vec<f64> = cols.iter().map(|&c| native.centre(r0, c).0).collect();
    let ys: Vec<f64> = rows.iter().map(|&r| native.centre(r, c0).1).collect();
    let corner = native.corner(r0, c0);
    let one = (native.corner(r0, c0 + 1).0 - corner.0, native.corner(r0 + 1, c0).1 - corner.1);
    placement(&ys, &xs, one, grid.kind == Kind::Geographic, keys)
}

/// `text` escaped for XML, control characters (which XML 1.0 cannot hold) as spaces.
fn escaped(text: &str) -> String {
    escape(&text.replace(char::is_control, " "))
}

/// What `GDAL_METADATA` says of an image.
#[derive(Default)]
pub struct Metadata {
    /// The bands' dimension and each band's label.
    pub bands: Option<(String, Vec<String>)>,
    /// Dataset items: the labels of dimensions selected by one index, and such.
    pub items: Vec<(String, String)>,
}

impl Metadata {
    /// The XML, with the variable's CF attributes (`long_name`, `standard_name`, `units`
    /// as items; `units`, `scale_factor`, `add_offset` as each band's unit type, scale and
    /// offset, which GDAL applies as CF readers do) for every one of `bands` bands.
    pub fn xml(&self, attributes: &Map<String, Value>, bands: usize) -> String {
        let mut out = String::from("<GDALMetadata>\n");
        let mut item = |name: &str, value: &str, band: Option<(usize, &str)>| {
            let band = band.map_or(String::new(), |(b, role)| {
                if role.is_empty() { format!(r#" sample="{b}""#) } else { format!(r#" sample="{b}" role="{role}""#) }
            });
            let _ = writeln!(out, "  <Item name=\"{}\"{band}>{}</Item>", escaped(name), escaped(value));
        };
        for (name, value) in &self.items {
            item(name, value, None);
        }
        let text = |key: &str| attributes.get(key).and_then(Value::as_str);
        for key in ["long_name", "standard_name", "units"] {
            if let Some(value) = text(key) {
                item(key, value, None);
            }
        }
        let number = |key: &str| attributes.get(key).and_then(Value::as_f64);
        for b in 0..bands {
            if let Some((dimension, labels)) = &self.bands {
                item("DESCRIPTION", &labels[b], Some((b, "description")));
                item(dimension, &labels[b], Some((b, "")));
            }
            if let Some(units) = text("units") {
                item("UNITTYPE", units, Some((b, "unittype")));
            }
            if number("scale_factor").is_some() || number("add_offset").is_some() {
                item("SCALE", &number("scale_factor").unwrap_or(1.0).to_string(), Some((b, "scale")));
                item("OFFSET", &number("add_offset").unwrap_or(0.0).to_string(), Some((b, "offset")));
            }
        }
        out.push_str("</GDALMetadata>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> GeoKeys {
        GeoKeys { directory: vec![1, 1, 0, 0], doubles: vec![], ascii: String::new() }
    }

    #[test]
    fn edges_come_from_centres_north_up() {
        // Latitudes ascending (south-up): flipped; longitudes across the 0..360 seam.
        let p = placement(&[10.5, 11.5, 12.5], &[358.0, 359.0, 0.0, 1.0], (0.0, 0.0), true, keys()).unwrap();
        assert_eq!((p.georef.origin, p.georef.pixel), ((357.5, 13.0), (1.0, 1.0)));
        assert!(p.flip_rows && !p.flip_cols);
        // One cell: its own size.
        let p = placement(&[5.0], &[100.0], (30.0, -30.0), false, keys()).unwrap();
        assert_eq!((p.georef.origin, p.georef.pixel), ((85.0, 20.0), (30.0, 30.0)));
        let err = placement(&[0.0, 1.0, 2.5], &[0.0, 1.0], (0.0, 0.0), false, keys()).err().unwrap();
        assert!(err.contains("not regular"), "{err}");
    }

    #[test]
    fn metadata_names_bands_and_packing() {
        let attributes = serde_json::json!({"units": "K", "scale_factor": 0.01, "long_name": "a < b"});
        let metadata =
            Metadata { bands: Some(("time".into(), vec!["2000-01-01".into(), "2000-01-02".into()])), items: vec![] };
        let xml = metadata.xml(attributes.as_object().unwrap(), 2);
        assert!(xml.contains(r#"<Item name="DESCRIPTION" sample="1" role="description">2000-01-02</Item>"#), "{xml}");
        assert!(xml.contains(r#"<Item name="SCALE" sample="0" role="scale">0.01</Item>"#), "{xml}");
        assert!(xml.contains("a &lt; b"), "{xml}");
    }
}
