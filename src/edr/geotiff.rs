//! A cube answer as a Cloud Optimized GeoTIFF (`f=GeoTIFF`): one parameter, CF-decoded as
//! float64 with NaN missing, its steps (times × levels) as bands labelled by time and
//! level, placed from the coverage's cell centres — CRS84 longitudes/latitudes, or a
//! projected grid's native x/y in its CRS.

use zarrd_core::grid::Crs;
use zarrd_core::grid::Kind;
use zarrd_core::grid::geokeys::geokeys;

use crate::downloads::geotiff::{Metadata, Placement, placement};
use crate::downloads::tiff::Raster;
use crate::downloads::tiles::Sample;
use crate::edr::collection::Collection;
use crate::edr::encode::Answer;
use crate::error::{Error, Result};

/// The image of `answer` (a cube query of `collection`), its rows as the answer has them,
/// and where it lies.
pub fn image(collection: &Collection, answer: &Answer) -> Result<(Raster, Placement)> {
    let refuse = |why: String| Error::Unsupported(format!("f=GeoTIFF: {why}"));
    let [coverage] = answer.coverages.as_slice() else {
        return Err(refuse("a cube answers one Grid coverage; this answer has none or several".into()));
    };
    if coverage.listed {
        return Err(refuse("on a curvilinear grid a cube is a list of cells: use f=CoverageJSON or f=CSV".into()));
    }
    let [values] = coverage.values.as_slice() else {
        return Err(Error::BadRequest(format!(
            "f=GeoTIFF holds one parameter; {} were asked for: give one with parameter-name",
            coverage.values.len()
        )));
    };
    let (rows, cols) = (coverage.y.len(), coverage.x.len());
    let bands = values.len() / (rows * cols).max(1);
    // A projected grid's cells in its native x/y; else CRS84 longitudes/latitudes.
    let wgs84;
    let (crs, geographic) = if let (Some(_), Some(found)) = (&coverage.places, &collection.grid) {
        (&found.grid.crs, found.grid.kind == Kind::Geographic)
    } else {
        wgs84 = Crs::from_epsg(4326).map_err(|e| refuse(e.to_string()))?;
        (&wgs84, true)
    };
    let keys = geokeys(crs).map_err(refuse)?;
    let placed = placement(&coverage.y, &coverage.x, (f64::NAN, f64::NAN), geographic, keys).map_err(refuse)?;
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let times = answer.domain.t.clone().unwrap_or_default();
    let levels = answer.domain.z.clone().unwrap_or_default();
    let label = |b: usize| {
        let t = (!times.is_empty()).then(|| times[(b / levels.len().max(1)) % times.len()].clone());
        let z = (!levels.is_empty()).then(|| format!("z={}", levels[b % levels.len()]));
        [t, z].into_iter().flatten().collect::<Vec<_>>().join(", ")
    };
    let only = label(0);
    let metadata = Metadata {
        bands: (times.len() > 1 || levels.len() > 1).then(|| ("step".to_owned(), (0..bands).map(label).collect())),
        items: [("parameter".to_owned(), answer.plan.parameters[0].name.clone())]
            .into_iter()
            .chain((bands == 1 && !only.is_empty()).then(|| ("step".to_owned(), only)))
            .collect(),
    };
    let p = &answer.plan.parameters[0];
    let mut attributes = serde_json::Map::new();
    attributes.insert("long_name".into(), p.label.clone().into());
    if let Some(units) = &p.units {
        attributes.insert("units".into(), units.clone().into());
    }
    let raster = Raster {
        sample: Sample::F64,
        bands,
        rows,
        cols,
        data,
        nodata: Some(f64::NAN),
        metadata: Some(metadata.xml(&attributes, bands)),
    };
    Ok((raster, placed))
}
