//! Well-known text CRSs (WKT 1 as GDAL writes it, WKT 2 as PROJ and pyproj write it),
//! read as far as a grid needs: the EPSG code of the CRS itself (its last `ID` or
//! `AUTHORITY`, not those of the base CRS or datum inside it). A WKT without a code is
//! not guessed at: the caller falls back to the CF parameters beside it, or says so.

use crate::grid::crs::{Crs, CrsError, SUPPORTED};

/// A node of WKT: `KEYWORD[value, value, …]`, a value being text, a number or a node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Text(String),
    Number(String),
    Node(Node),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) keyword: String,
    pub(crate) items: Vec<Item>,
}

/// The deepest nesting read (real CRSs nest about 6 deep).
const MAX_DEPTH: usize = 32;

/// Why text is not WKT.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "is not WKT that zarrd can read: {0} (supported: WKT 1 or 2 naming the EPSG code of a CRS whose projection is one of {SUPPORTED}, or the CF grid-mapping parameters beside it)"
)]
pub struct WktError(String);

/// The CRS `text` describes (by its EPSG code).
pub fn crs(text: &str) -> Result<Crs, WktError> {
    const CRS: [&str; 9] = [
        "PROJCS",
        "PROJCRS",
        "PROJECTEDCRS",
        "GEOGCS",
        "GEOGCRS",
        "GEOGRAPHICCRS",
        "GEODCRS",
        "GEODETICCRS",
        "BOUNDCRS",
    ];
    let root = parse(text)?;
    let keyword = root.keyword.to_ascii_uppercase();
    if !CRS.contains(&keyword.as_str()) {
        return Err(WktError(format!("`{keyword}` is not a projected or geographic CRS")));
    }
    // A BOUNDCRS (a CRS with a transformation to WGS 84) is its SOURCECRS.
    let node = if keyword == "BOUNDCRS" {
        root.items
            .iter()
            .find_map(|i| match i {
                Item::Node(n) if n.keyword.eq_ignore_ascii_case("SOURCECRS") => n.items.iter().find_map(|i| match i {
                    Item::Node(n) => Some(n),
                    _ => None,
                }),
                _ => None,
            })
            .ok_or_else(|| WktError("a BOUNDCRS without its SOURCECRS".to_owned()))?
    } else {
        &root
    };
    let code = epsg(node).ok_or_else(|| WktError("it names no EPSG code".to_owned()))?;
    Crs::from_epsg(code)
        .map(|mut c| {
            c.wkt = Some(text.to_owned());
            c
        })
        .map_err(|e| match e {
            CrsError::Unsupported(m) | CrsError::Invalid(m) => WktError(m),
        })
}

/// The EPSG code of `node` itself: its last `ID["EPSG", n]` or `AUTHORITY["EPSG", "n"]`.
fn epsg(node: &Node) -> Option<u32> {
    node.items.iter().rev().find_map(|item| {
        let Item::Node(n) = item else { return None };
        if !matches!(n.keyword.to_ascii_uppercase().as_str(), "ID" | "AUTHORITY") {
            return None;
        }
        match n.items.as_slice() {
            [Item::Text(auth), code, ..] if auth.eq_ignore_ascii_case("EPSG") => match code {
                Item::Text(c) | Item::Number(c) => c.trim().parse().ok(),
                Item::Node(_) => None,
            },
            _ => None,
        }
    })
}

/// Parses WKT into its tree (brackets `[]` or `()`, text in double quotes with `""` for a
/// quote, numbers and bare words as values).
pub(crate) fn parse(text: &str) -> Result<Node, WktError> {
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    let node = p.node(0)?;
    p.space();
    if p.at != p.s.len() {
        return Err(WktError(format!("text after the end of the CRS at byte {}", p.at)));
    }
    Ok(node)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn word(&mut self) -> String {
        self.space();
        let start = self.at;
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'+')) {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.at]).into_owned()
    }

    fn node(&mut self, depth: usize) -> Result<Node, WktError> {
        if depth > MAX_DEPTH {
            return Err(WktError(format!("nested deeper than {MAX_DEPTH}")));
        }
        let keyword = self.word();
        if keyword.is_empty() || !keyword.as_bytes()[0].is_ascii_alphabetic() {
            return Err(WktError(format!("a keyword was expected at byte {}", self.at)));
        }
        self.space();
        let close = match self.s.get(self.at) {
            Some(b'[') => b']',
            Some(b'(') => b')',
            _ => return Ok(Node { keyword, items: Vec::new() }),
        };
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.space();
            match self.s.get(self.at) {
                None => return Err(WktError(format!("`{keyword}[` is never closed"))),
                Some(b'"') => items.push(Item::Text(self.quoted()?)),
                Some(c) if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.') => {
                    items.push(Item::Number(self.word()));
                }
                Some(c) if c.is_ascii_alphabetic() => {
                    let node = self.node(depth + 1)?;
                    items.push(Item::Node(node));
                }
                Some(c) => return Err(WktError(format!("unexpected `{}` at byte {}", char::from(*c), self.at))),
            }
            self.space();
            match self.s.get(self.at) {
                Some(b',') => self.at += 1,
                Some(&c) if c == close => {
                    self.at += 1;
                    return Ok(Node { keyword, items });
                }
                _ => return Err(WktError(format!("`,` or `{}` expected at byte {}", char::from(close), self.at))),
            }
        }
    }

    fn quoted(&mut self) -> Result<String, WktError> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.at) {
                None => return Err(WktError("a quoted text is never closed".to_owned())),
                Some(b'"') if self.s.get(self.at + 1) == Some(&b'"') => {
                    out.push(b'"');
                    self.at += 2;
                }
                Some(b'"') => {
                    self.at += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(&c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::crs::Kind;

    #[test]
    fn the_code_is_the_crs_own_not_its_base_crs() {
        let wkt2 = r#"PROJCRS["WGS 84 / NSIDC Sea Ice Polar Stereographic North",BASEGEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,298.257223563,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]],ID["EPSG",4326]],CONVERSION["US NSIDC Sea Ice polar stereographic north",METHOD["Polar Stereographic (variant B)",ID["EPSG",9829]],PARAMETER["Latitude of standard parallel",70,ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",8832]]],CS[Cartesian,2],AXIS["easting (X)",south,MERIDIAN[45,ANGLEUNIT["degree",0.0174532925199433]],ORDER[1],LENGTHUNIT["metre",1]],USAGE[SCOPE["Polar research."],AREA["Northern hemisphere - north of 60°N onshore and offshore, including Arctic."],BBOX[60,-180,90,180]],ID["EPSG",3413]]"#;
        let crs = crs(wkt2).unwrap();
        assert_eq!((crs.code, crs.kind), (Some(3413), Kind::Projected));
        let wkt1 = r#"GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]"#;
        assert_eq!(super::crs(wkt1).unwrap().kind, Kind::Geographic);
        let no_code = r#"PROJCRS["unknown",BASEGEOGCRS["WGS 84",DATUM["x",ELLIPSOID["WGS 84",6378137,298.257223563]],ID["EPSG",4326]],CONVERSION["x",METHOD["Lambert Conic Conformal (1SP)"]],CS[Cartesian,2]]"#;
        assert!(super::crs(no_code).unwrap_err().to_string().contains("no EPSG code"));
        for bad in ["PROJCRS[garbage", "PROJCRS[\"a\"", "VERTCRS[\"h\",ID[\"EPSG\",5703]]", "", "PROJCRS[\"a\"] tail"] {
            assert!(super::crs(bad).is_err(), "{bad}");
        }
        let deep = format!("{}{}", "A[".repeat(100), "]".repeat(100));
        assert!(parse(&deep).unwrap_err().to_string().contains("deeper"));
    }
}
