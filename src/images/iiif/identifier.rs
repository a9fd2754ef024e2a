//! IIIF image identifiers: `DS/PATH` (percent-decoded), plus either `[i,j,...]` fixing the
//! leading dimensions of an array by position, or `[t=0,z=12]` fixing axes by name (an
//! OME-Zarr image's `axes`, else the array's `dimension_names`). Also the error type and
//! number parsing the request grammar shares.

/// A rejected request parameter (answered 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GrammarError(pub String);

pub(super) fn bad(text: impl Into<String>) -> GrammarError {
    GrammarError(text.into())
}

pub(super) fn integer(text: &str, what: &str, forms: &str) -> Result<u64, GrammarError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!("{what} `{text}` is not a non-negative integer; {forms}")));
    }
    text.parse::<u64>().map_err(|_| bad(format!("{what} `{text}` is too large; {forms}")))
}

const FIXED_FORMS: &str = "the identifier's `[...]` holds one non-negative integer per leading dimension (`[3,0]`) or axes fixed by name (`[t=0,z=12]`)";

/// An image identifier: `DS/PATH`, with `[i,j,...]` fixing the leading dimensions of an
/// array with more than two, or `[name=i,...]` fixing axes by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identifier {
    pub dataset: String,
    pub path: String,
    /// Leading indices by position (`[i,j]`); empty when axes are named or none are fixed.
    pub indices: Vec<u64>,
    /// Axes fixed by name (`[t=0,z=12]`), in the order given.
    pub named: Vec<(String, u64)>,
}

impl Identifier {
    /// An identifier fixing leading dimensions by position.
    pub fn new(dataset: impl Into<String>, path: impl Into<String>, indices: Vec<u64>) -> Self {
        Self { dataset: dataset.into(), path: path.into(), indices, named: Vec::new() }
    }

    /// Parses an identifier already percent-decoded (`DS/PATH[i,j]` or `DS/PATH[t=0,z=1]`).
    pub fn parse(text: &str) -> Result<Self, GrammarError> {
        let (name, indices, named) = match text.strip_suffix(']').and_then(|t| t.rsplit_once('[')) {
            Some((name, list)) if list.contains('=') => {
                let mut named: Vec<(String, u64)> = Vec::new();
                for item in list.split(',') {
                    let Some((axis, value)) = item.split_once('=') else {
                        return Err(bad(format!(
                            "`{item}` in `[{list}]` names no axis; {FIXED_FORMS}, not both forms at once"
                        )));
                    };
                    let axis = axis.trim();
                    if axis.is_empty() {
                        return Err(bad(format!("`{item}` in `[{list}]` has an empty axis name; {FIXED_FORMS}")));
                    }
                    if named.iter().any(|(a, _)| a == axis) {
                        return Err(bad(format!("axis `{axis}` is fixed twice in `[{list}]`")));
                    }
                    named.push((axis.to_owned(), integer(value.trim(), "axis index", FIXED_FORMS)?));
                }
                (name, Vec::new(), named)
            }
            Some((name, list)) => {
                let indices = list
                    .split(',')
                    .map(|v| integer(v.trim(), "leading index", FIXED_FORMS))
                    .collect::<Result<Vec<_>, _>>()?;
                (name, indices, Vec::new())
            }
            None => (text, Vec::new(), Vec::new()),
        };
        let Some((dataset, path)) = name.split_once('/') else {
            return Err(bad(format!(
                "identifier `{text}` must be DATASET/PATH of an array or image (slashes percent-encoded as %2F; DATASET/ for the dataset root), e.g. sample%2Fterrain%2Felevation"
            )));
        };
        if dataset.is_empty() {
            return Err(bad(format!("identifier `{text}` has an empty dataset name")));
        }
        Ok(Self { dataset: dataset.to_owned(), path: path.to_owned(), indices, named })
    }

    /// The identifier as text, percent-encoded for use as one URL path segment.
    pub fn encoded(&self) -> String {
        let mut text = format!("{}/{}", self.dataset, self.path);
        if !self.indices.is_empty() {
            let list: Vec<String> = self.indices.iter().map(u64::to_string).collect();
            text = format!("{text}[{}]", list.join(","));
        } else if !self.named.is_empty() {
            let list: Vec<String> = self.named.iter().map(|(a, i)| format!("{a}={i}")).collect();
            text = format!("{text}[{}]", list.join(","));
        }
        percent_encoding::utf8_percent_encode(&text, SEGMENT).to_string()
    }
}

/// Everything but unreserved characters is escaped, so the identifier is one segment.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_name_dataset_path_and_leading_indices() {
        let id = Identifier::parse("sample/climate/t2m[3]").unwrap();
        assert_eq!((id.dataset.as_str(), id.path.as_str(), id.indices.as_slice()), ("sample", "climate/t2m", &[3][..]));
        assert_eq!(id, Identifier::new("sample", "climate/t2m", vec![3]));
        assert_eq!(id.encoded(), "sample%2Fclimate%2Ft2m%5B3%5D");
        assert_eq!(Identifier::parse("a/b").unwrap().indices, Vec::<u64>::new());
        assert!(Identifier::parse("nodataset").is_err());
        assert!(Identifier::parse("a/b[x]").is_err());
        assert!(Identifier::parse("a/b[-1]").is_err());
    }

    #[test]
    fn identifiers_fix_axes_by_name() {
        let id = Identifier::parse("ome/cells.ome.zarr[t=0, z=12]").unwrap();
        assert_eq!(id.named, vec![("t".to_owned(), 0), ("z".to_owned(), 12)]);
        assert!(id.indices.is_empty());
        assert_eq!(id.encoded(), "ome%2Fcells.ome.zarr%5Bt%3D0%2Cz%3D12%5D");
        assert_eq!(Identifier::parse("a/b[c=2]").unwrap().named, vec![("c".to_owned(), 2)]);
        for bad in ["a/b[t=0,1]", "a/b[=1]", "a/b[t=x]", "a/b[t=1,t=2]", "a/b[t=-1]"] {
            assert!(Identifier::parse(bad).is_err(), "{bad}");
        }
    }
}
