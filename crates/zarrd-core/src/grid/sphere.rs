//! Cells on the sphere: the area of a polygon whose vertices (lon/lat) are joined by great
//! circles, on the sphere of the mean Earth radius (IUGG, R = 6 371 008.8 m), as
//! `weights=area` weighs the cells of any grid.

/// The mean radius of the Earth (IUGG), in metres.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// The unit vector of longitude `lon`, latitude `lat` (degrees).
pub fn unit(lon: f64, lat: f64) -> [f64; 3] {
    let (sl, cl) = lon.to_radians().sin_cos();
    let (sp, cp) = lat.to_radians().sin_cos();
    [cp * cl, cp * sl, sp]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn minus(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// The signed spherical excess of triangle (a, b, c) on the unit sphere (Van Oosterom and
/// Strackee: tan(E/2) = a·(b×c) / (1 + a·b + b·c + c·a)). The triple product is taken as
/// a·((b−a)×(c−a)), equal in exact arithmetic and free of the cancellation that costs a
/// 60 m cell six digits.
fn excess(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    2.0 * dot(a, cross(minus(b, a), minus(c, a))).atan2(1.0 + dot(a, b) + dot(b, c) + dot(c, a))
}

/// The area in m² of the polygon through `vertices` (lon/lat degrees, in order, either
/// way round; not closed) joined by great circles, as a fan of triangles from the first.
pub fn area(vertices: &[(f64, f64)]) -> f64 {
    let Some(&(lon0, lat0)) = vertices.first() else { return 0.0 };
    let a = unit(lon0, lat0);
    let e: f64 = vertices.windows(2).skip(1).map(|w| excess(a, unit(w[0].0, w[0].1), unit(w[1].0, w[1].1))).sum();
    e.abs() * EARTH_RADIUS_M * EARTH_RADIUS_M
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_octant_is_an_eighth_of_the_sphere() {
        let sphere = 4.0 * std::f64::consts::PI * EARTH_RADIUS_M * EARTH_RADIUS_M;
        let octant = area(&[(0.0, 0.0), (90.0, 0.0), (0.0, 90.0)]);
        assert!((octant / sphere - 0.125).abs() < 1e-12, "{octant}");
        // A cell between meridians and great circles (not parallels) is smaller than the
        // latitude band's: 1°×1° at the equator is nearly R²·(π/180)².
        let cell = area(&[(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]);
        let flat = (EARTH_RADIUS_M * 1f64.to_radians()).powi(2);
        assert!((cell / flat - 1.0).abs() < 1e-4, "{cell} {flat}");
        assert!((area(&[(0.0, 1.0), (1.0, 1.0), (1.0, 0.0), (0.0, 0.0)]) - cell).abs() < 1e-3, "either way round");
    }
}
