//! Cell areas on the sphere, for `weights=area`: a cell of a latitude/longitude grid spans
//! `R²·Δλ·(sin φ₂ − sin φ₁)`, with its edges midway between the coordinates of the whole
//! grid (the outer cells as wide as their neighbour) and latitudes clipped to ±90°. The
//! area is a product of a latitude factor and a longitude factor, so each axis gives one
//! factor per index.

pub use crate::grid::sphere::EARTH_RADIUS_M;

/// Why an axis has no cell edges.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AreaError {
    #[error("area weights need at least two {0} coordinates to find the cells' edges")]
    TooShort(&'static str),
    #[error("area weights need finite {0} coordinates")]
    NotFinite(&'static str),
}

/// The edges of the cells around `coords` (either order): `n + 1` values, midway between
/// neighbours, the outer ones as far out as the neighbouring half-cell.
fn edges(coords: &[f64], what: &'static str) -> Result<Vec<f64>, AreaError> {
    let n = coords.len();
    if n < 2 {
        return Err(AreaError::TooShort(what));
    }
    if coords.iter().any(|c| !c.is_finite()) {
        return Err(AreaError::NotFinite(what));
    }
    Ok(crate::coords::cell_edges(coords))
}

/// Per latitude index, `|sin φ₂ − sin φ₁|` of its cell (edges clipped to ±90°).
pub fn latitude_factors(lat: &[f64]) -> Result<Vec<f64>, AreaError> {
    let e = edges(lat, "latitude")?;
    Ok(e.windows(2)
        .map(|w| {
            let s = |v: f64| v.clamp(-90.0, 90.0).to_radians().sin();
            (s(w[1]) - s(w[0])).abs()
        })
        .collect())
}

/// Per longitude index, `R²·Δλ` of its cell (Δλ in radians).
pub fn longitude_factors(lon: &[f64]) -> Result<Vec<f64>, AreaError> {
    let e = edges(lon, "longitude")?;
    Ok(e.windows(2).map(|w| (w[1] - w[0]).abs().to_radians() * EARTH_RADIUS_M * EARTH_RADIUS_M).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_global_grid_covers_the_sphere() {
        // Cell centres of a 1° global grid: the areas add up to 4πR².
        let lat: Vec<f64> = (0..180).map(|i| 89.5 - f64::from(i)).collect();
        let lon: Vec<f64> = (0..360).map(|i| 0.5 + f64::from(i)).collect();
        let total: f64 =
            latitude_factors(&lat).unwrap().iter().sum::<f64>() * longitude_factors(&lon).unwrap().iter().sum::<f64>();
        let sphere = 4.0 * std::f64::consts::PI * EARTH_RADIUS_M * EARTH_RADIUS_M;
        assert!((total / sphere - 1.0).abs() < 1e-12, "{total} vs {sphere}");
        // Outer cells are clipped at the poles: centres at ±90 still cover the sphere once.
        let poles: Vec<f64> = (0..=18).map(|i| 90.0 - 10.0 * f64::from(i)).collect();
        let f: f64 = latitude_factors(&poles).unwrap().iter().sum();
        assert!((f - 2.0).abs() < 1e-12, "{f}");
        assert_eq!(latitude_factors(&[1.0]), Err(AreaError::TooShort("latitude")));
    }
}
