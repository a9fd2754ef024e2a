//! `within=`: WKT `POLYGON` and `MULTIPOLYGON` in longitude/latitude degrees, and which cell
//! centres they hold — by the even–odd rule over each polygon's rings (so holes are
//! outside), a centre on an edge counting as inside. Longitudes compare modulo 360: a
//! centre is taken into the polygon's own longitude range before the test, so a polygon
//! written −20..20 holds the cells at 350 of a 0..360 grid.

/// The most vertices a `within` may have.
pub const MAX_VERTICES: usize = 100_000;

/// The most edge tests (cells tested × vertices) one request may ask of a polygon: about a
/// second of CPU, so a detailed polygon over a large grid is refused, not left to run.
pub const MAX_EDGE_TESTS: u64 = 1 << 30;

/// Polygons, each a list of rings of (lon, lat) vertices.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    polygons: Vec<Vec<Vec<(f64, f64)>>>,
    /// The lowest longitude of any vertex: centres are brought to `[west, west + 360)`.
    west: f64,
}

/// Why a `within` is not a polygon.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "within is not a polygon: {0}; allowed are WKT POLYGON((lon lat, lon lat, ...)) and MULTIPOLYGON(((lon lat, ...)), ...) in degrees, each ring closed or not, at most 100000 vertices"
)]
pub struct WktError(pub String);

impl Shape {
    /// Parses WKT.
    pub fn parse(wkt: &str) -> Result<Self, WktError> {
        let text = wkt.trim();
        let upper = text.get(..12).unwrap_or(text).to_ascii_uppercase();
        let (multi, body) = if upper.starts_with("MULTIPOLYGON") {
            (true, &text[12..])
        } else if upper.starts_with("POLYGON") {
            (false, &text[7..])
        } else {
            return Err(WktError(format!(
                "`{}` is neither POLYGON nor MULTIPOLYGON",
                text.chars().take(20).collect::<String>()
            )));
        };
        let body = body.trim();
        let inner = body
            .strip_prefix('(')
            .and_then(|b| b.strip_suffix(')'))
            .ok_or_else(|| WktError("the coordinates must be in parentheses".into()))?;
        let polygon_texts: Vec<&str> = if multi { split_groups(inner)? } else { vec![inner] };
        let mut vertices = 0usize;
        let mut polygons = Vec::with_capacity(polygon_texts.len());
        for p in polygon_texts {
            let mut rings = Vec::new();
            for ring_text in split_groups(p)? {
                let mut ring = Vec::new();
                for pair in ring_text.split(',') {
                    let mut parts = pair.split_whitespace();
                    let (Some(x), Some(y), None) = (parts.next(), parts.next(), parts.next()) else {
                        return Err(WktError(format!("`{}` is not a `lon lat` pair", pair.trim())));
                    };
                    let number = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
                    let (Some(lon), Some(lat)) = (number(x), number(y)) else {
                        return Err(WktError(format!("`{}` is not a pair of numbers", pair.trim())));
                    };
                    vertices += 1;
                    if vertices > MAX_VERTICES {
                        return Err(WktError("too many vertices".into()));
                    }
                    ring.push((lon, lat));
                }
                if ring.first() == ring.last() && ring.len() > 1 {
                    ring.pop();
                }
                if ring.len() < 3 {
                    return Err(WktError("a ring needs at least three distinct vertices".into()));
                }
                rings.push(ring);
            }
            polygons.push(rings);
        }
        let west = polygons.iter().flatten().flatten().map(|v| v.0).fold(f64::INFINITY, f64::min);
        Ok(Self { polygons, west })
    }

    /// The vertices of every ring.
    pub fn vertices(&self) -> usize {
        self.polygons.iter().flatten().map(Vec::len).sum()
    }

    /// Why testing `cells` cell centres would be too much work for this polygon, if it
    /// would (more than [`MAX_EDGE_TESTS`] edge tests).
    pub fn too_much_work(&self, cells: u64) -> Option<String> {
        let tests = cells.saturating_mul(self.vertices() as u64);
        (tests > MAX_EDGE_TESTS).then(|| {
            format!(
                "testing {cells} cell centres against a polygon of {} vertices is {tests} edge tests, more than {MAX_EDGE_TESTS}; simplify the polygon or narrow the selection to its box",
                self.vertices()
            )
        })
    }

    /// The bounding box: (west, south, east, north), longitudes as written.
    pub fn bounds(&self) -> (f64, f64, f64, f64) {
        let mut b = (f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
        for &(x, y) in self.polygons.iter().flatten().flatten() {
            b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
        }
        b
    }

    /// Whether the cell centre (`lon`, `lat`) is inside.
    pub fn contains(&self, lon: f64, lat: f64) -> bool {
        let x = self.west + (lon - self.west).rem_euclid(360.0);
        self.polygons.iter().any(|rings| {
            if rings.iter().any(|ring| on_edge(ring, x, lat)) {
                return true;
            }
            rings.iter().filter(|ring| crosses_odd(ring, x, lat)).count() % 2 == 1
        })
    }
}

/// The parenthesised groups of `text`, `(a), (b)` → `a`, `b`.
fn split_groups(text: &str) -> Result<Vec<&str>, WktError> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, None);
    for (i, c) in text.char_indices() {
        match c {
            '(' => {
                if depth == 0 {
                    start = Some(i + 1);
                }
                depth += 1;
            }
            ')' => {
                depth = depth.checked_sub(1).ok_or_else(|| WktError("unbalanced parentheses".into()))?;
                if depth == 0 {
                    out.push(&text[start.unwrap_or(i)..i]);
                }
            }
            ',' | ' ' | '\t' | '\n' | '\r' => {}
            _ if depth == 0 => return Err(WktError(format!("unexpected `{c}` between rings"))),
            _ => {}
        }
    }
    if depth != 0 || out.is_empty() {
        return Err(WktError("unbalanced or empty parentheses".into()));
    }
    Ok(out)
}

/// Whether (x, y) lies on an edge of `ring`.
fn on_edge(ring: &[(f64, f64)], x: f64, y: f64) -> bool {
    (0..ring.len()).any(|i| {
        let (a, b) = (ring[i], ring[(i + 1) % ring.len()]);
        let cross = (b.0 - a.0) * (y - a.1) - (b.1 - a.1) * (x - a.0);
        cross.abs() <= 1e-12 * (1.0 + (b.0 - a.0).abs() + (b.1 - a.1).abs())
            && x >= a.0.min(b.0)
            && x <= a.0.max(b.0)
            && y >= a.1.min(b.1)
            && y <= a.1.max(b.1)
    })
}

/// Whether a ray from (x, y) towards +x crosses `ring` an odd number of times.
fn crosses_odd(ring: &[(f64, f64)], x: f64, y: f64) -> bool {
    let mut inside = false;
    let mut j = ring.len() - 1;
    for i in 0..ring.len() {
        let ((xi, yi), (xj, yj)) = (ring[i], ring[j]);
        if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
            inside = !inside;
        }
        j = i;
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detailed_polygon_over_many_cells_is_too_much_work() {
        // A ring of 1,000 vertices (a circle), and the cells of a 0.25° global grid.
        let ring: Vec<String> = (0..1000)
            .map(|k| {
                let a = f64::from(k) / 1000.0 * std::f64::consts::TAU;
                format!("{} {}", 10.0 * a.cos(), 10.0 * a.sin())
            })
            .collect();
        let circle = Shape::parse(&format!("POLYGON(({}))", ring.join(","))).unwrap();
        assert_eq!(circle.vertices(), 1000);
        assert!(circle.too_much_work(1440 * 721).is_none(), "7.2e8 tests are allowed");
        let why = circle.too_much_work(2 * 1440 * 721).unwrap();
        assert!(why.contains("1000 vertices") && why.contains("simplify"), "{why}");
    }

    #[test]
    fn holds_centres_by_even_odd_with_edges_inside() {
        let square = Shape::parse("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))").unwrap();
        assert!(square.contains(5.0, 5.0));
        assert!(square.contains(10.0, 5.0), "on an edge");
        assert!(square.contains(0.0, 0.0), "on a vertex");
        assert!(!square.contains(10.5, 5.0));
        let holed = Shape::parse("polygon ((0 0, 10 0, 10 10, 0 10), (4 4, 6 4, 6 6, 4 6))").unwrap();
        assert!(!holed.contains(5.0, 5.0));
        assert!(holed.contains(2.0, 5.0));
        let two = Shape::parse("MULTIPOLYGON(((0 0, 1 0, 1 1, 0 1)), ((5 5, 6 5, 6 6, 5 6)))").unwrap();
        assert!(two.contains(5.5, 5.5) && two.contains(0.5, 0.5) && !two.contains(3.0, 3.0));
        assert_eq!(two.bounds(), (0.0, 0.0, 6.0, 6.0));
    }

    #[test]
    fn longitudes_compare_modulo_360() {
        let seam = Shape::parse("POLYGON((-20 -10, 20 -10, 20 10, -20 10, -20 -10))").unwrap();
        assert!(seam.contains(350.0, 0.0));
        assert!(seam.contains(10.0, 0.0));
        assert!(seam.contains(-350.0, 0.0));
        assert!(!seam.contains(180.0, 0.0));
        let east = Shape::parse("POLYGON((170 0, 190 0, 190 5, 170 5))").unwrap();
        assert!(east.contains(-175.0, 2.0));
    }

    #[test]
    fn malformed_text_is_named() {
        for bad in [
            "POINT(1 2)",
            "POLYGON(0 0, 1 1)",
            "POLYGON((0 0, 1 1))",
            "POLYGON((0 0, 1 x, 2 2))",
            "POLYGON((0 0, 1 0, 1 1)",
            "MULTIPOLYGON(((0 0, 1 0, 1 1)) x)",
            "",
        ] {
            assert!(Shape::parse(bad).is_err(), "{bad}");
        }
    }
}
