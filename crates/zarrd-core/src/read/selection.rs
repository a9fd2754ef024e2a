//! Array selections in `NumPy` basic-indexing syntax: `0:10:2,5,...,-3:`.
//!
//! [`Selection::parse`] checks the syntax; [`Selection::resolve`] applies it to a shape,
//! giving for every array dimension a start, a step and a count (integer indices keep one
//! element and drop the dimension from the result).

use std::fmt;

/// One comma-separated item of a selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Index(i64),
    Slice { start: Option<i64>, stop: Option<i64>, step: Option<i64> },
    Ellipsis,
}

/// A parsed, not yet resolved selection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    items: Vec<Item>,
}

/// The selection applied to one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DimSelection {
    pub start: u64,
    pub step: u64,
    pub count: u64,
    /// An integer index: one element, and the dimension is dropped from the result.
    pub drop: bool,
}

impl DimSelection {
    /// The whole of a dimension of length `len`.
    pub fn all(len: u64) -> Self {
        Self { start: 0, step: 1, count: len, drop: false }
    }

    /// The `i`-th selected coordinate.
    pub fn coord(&self, i: u64) -> u64 {
        self.start + i * self.step
    }
}

/// Why a selection was rejected; `item` is the 0-based position in `s`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error(
        "selection item {item} (`{text}`) is not valid: {why}; allowed are `start:stop[:step]` (any part may be empty, step >= 1), an integer index, or `...`"
    )]
    Syntax { item: usize, text: String, why: &'static str },
    #[error("`...` may appear only once in a selection")]
    MultipleEllipsis,
    #[error("the selection has {items} item(s) but the array has only {rank} dimension(s)")]
    TooManyItems { items: usize, rank: usize },
    #[error("index {index} (selection item {item}) is out of range for dimension {dim} of length {len}; allowed is -{len} to {max}", max = i128::from(*len) - 1)]
    IndexOutOfRange { item: usize, dim: usize, index: i64, len: u64 },
}

impl Selection {
    /// Parses the `s` query parameter. An empty string selects everything.
    pub fn parse(text: &str) -> Result<Self, SelectionError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let items = text
            .split(',')
            .enumerate()
            .map(|(i, raw)| {
                parse_item(raw.trim()).map_err(|why| SelectionError::Syntax { item: i, text: raw.to_owned(), why })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
            return Err(SelectionError::MultipleEllipsis);
        }
        Ok(Self { items })
    }

    /// Applies the selection to an array of `shape`.
    pub fn resolve(&self, shape: &[u64]) -> Result<Vec<DimSelection>, SelectionError> {
        let rank = shape.len();
        let explicit = self.items.iter().filter(|i| !matches!(i, Item::Ellipsis)).count();
        if explicit > rank {
            return Err(SelectionError::TooManyItems { items: explicit, rank });
        }
        // Expand `...` (or the implicit one at the end) into whole-dimension slices.
        let mut expanded: Vec<(Option<usize>, Item)> = Vec::with_capacity(rank);
        let whole = Item::Slice { start: None, stop: None, step: None };
        for (pos, item) in self.items.iter().enumerate() {
            if matches!(item, Item::Ellipsis) {
                expanded.extend(std::iter::repeat_n((None, whole), rank - explicit));
            } else {
                expanded.push((Some(pos), *item));
            }
        }
        expanded.resize(rank, (None, whole));
        expanded
            .iter()
            .zip(shape)
            .enumerate()
            .map(|(dim, (&(pos, item), &len))| {
                resolve_item(item, len).map_err(|index| SelectionError::IndexOutOfRange {
                    item: pos.unwrap_or(0),
                    dim,
                    index,
                    len,
                })
            })
            .collect()
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match item {
                Item::Index(v) => write!(f, "{v}")?,
                Item::Ellipsis => f.write_str("...")?,
                Item::Slice { start, stop, step } => {
                    let part = |v: &Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
                    write!(f, "{}:{}", part(start), part(stop))?;
                    if let Some(s) = step {
                        write!(f, ":{s}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn parse_item(text: &str) -> Result<Item, &'static str> {
    if text == "..." {
        return Ok(Item::Ellipsis);
    }
    if text.is_empty() {
        return Err("it is empty");
    }
    let number = |s: &str| -> Result<Option<i64>, &'static str> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        if !s.bytes().enumerate().all(|(i, b)| b.is_ascii_digit() || (i == 0 && (b == b'-' || b == b'+'))) {
            return Err("a bound is not an integer");
        }
        s.parse::<i64>().map(Some).map_err(|_| "a bound is not a 64-bit integer")
    };
    let parts: Vec<&str> = text.split(':').collect();
    match parts.as_slice() {
        [index] => number(index)?.map(Item::Index).ok_or("it is empty"),
        [start, stop] => Ok(Item::Slice { start: number(start)?, stop: number(stop)?, step: None }),
        [start, stop, step] => {
            let step = number(step)?;
            if step.is_some_and(|s| s < 1) {
                return Err("the step must be >= 1");
            }
            Ok(Item::Slice { start: number(start)?, stop: number(stop)?, step })
        }
        _ => Err("it has more than two `:`"),
    }
}

/// `NumPy`'s rules for one item on a dimension of `len`; the error is an out-of-range index.
fn resolve_item(item: Item, len: u64) -> Result<DimSelection, i64> {
    let len_i = i128::from(len);
    match item {
        Item::Index(i) => {
            let at = if i < 0 { len_i + i128::from(i) } else { i128::from(i) };
            if at < 0 || at >= len_i {
                return Err(i);
            }
            Ok(DimSelection { start: at as u64, step: 1, count: 1, drop: true })
        }
        Item::Slice { start, stop, step } => {
            let clamp = |v: Option<i64>, default: i128| -> i128 {
                match v {
                    None => default,
                    Some(v) if v < 0 => (len_i + i128::from(v)).max(0),
                    Some(v) => i128::from(v).min(len_i),
                }
            };
            let (start, stop) = (clamp(start, 0), clamp(stop, len_i));
            let step = i128::from(step.unwrap_or(1));
            let count = if stop > start { (stop - start + step - 1) / step } else { 0 };
            Ok(DimSelection {
                start: if count == 0 { 0 } else { start as u64 },
                step: step as u64,
                count: count as u64,
                drop: false,
            })
        }
        Item::Ellipsis => unreachable!("ellipsis is expanded before resolving"),
    }
}

/// The result shape: the count of every dimension not dropped by an integer index.
pub fn result_shape(dims: &[DimSelection]) -> Vec<u64> {
    dims.iter().filter(|d| !d.drop).map(|d| d.count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(s: &str, shape: &[u64]) -> Vec<(u64, u64, u64, bool)> {
        Selection::parse(s)
            .unwrap()
            .resolve(shape)
            .unwrap()
            .iter()
            .map(|d| (d.start, d.step, d.count, d.drop))
            .collect()
    }

    #[test]
    fn numpy_slice_semantics() {
        assert_eq!(resolve("", &[5, 6]), [(0, 1, 5, false), (0, 1, 6, false)]);
        assert_eq!(resolve("1:4", &[10]), [(1, 1, 3, false)]);
        assert_eq!(resolve("::3", &[10]), [(0, 3, 4, false)]);
        assert_eq!(resolve("-3:", &[10]), [(7, 1, 3, false)]);
        assert_eq!(resolve(":-8", &[10]), [(0, 1, 2, false)]);
        assert_eq!(resolve("-100:100", &[10]), [(0, 1, 10, false)]);
        assert_eq!(resolve("5:2", &[10]), [(0, 1, 0, false)]);
        assert_eq!(resolve("20:", &[10]), [(0, 1, 0, false)]);
        assert_eq!(resolve("1:8:3", &[10]), [(1, 3, 3, false)]);
        assert_eq!(resolve(" 2 : 4 ", &[10]), [(2, 1, 2, false)]);
    }

    #[test]
    fn integers_drop_dimensions() {
        assert_eq!(resolve("3", &[10, 4]), [(3, 1, 1, true), (0, 1, 4, false)]);
        assert_eq!(resolve("-1,-4", &[10, 4]), [(9, 1, 1, true), (0, 1, 1, true)]);
        let dims = Selection::parse("2,1:3").unwrap().resolve(&[5, 5]).unwrap();
        assert_eq!(result_shape(&dims), [2]);
    }

    #[test]
    fn ellipsis_fills_the_middle() {
        assert_eq!(resolve("...,2", &[3, 4, 5]), [(0, 1, 3, false), (0, 1, 4, false), (2, 1, 1, true)]);
        assert_eq!(resolve("1,...,2", &[3, 4, 5]), [(1, 1, 1, true), (0, 1, 4, false), (2, 1, 1, true)]);
        assert_eq!(resolve("1,2,...,3", &[3, 4, 5]), [(1, 1, 1, true), (2, 1, 1, true), (3, 1, 1, true)]);
        assert_eq!(resolve("...", &[]), []);
    }

    #[test]
    fn errors_name_the_item_and_the_range() {
        let err = Selection::parse("0:2,x").unwrap_err();
        assert!(matches!(err, SelectionError::Syntax { item: 1, .. }), "{err}");
        assert!(Selection::parse("1:2:0").is_err());
        assert!(Selection::parse("1:2:-1").is_err());
        assert!(Selection::parse("1:2:3:4").is_err());
        assert!(Selection::parse("1,,2").is_err());
        assert!(Selection::parse("99999999999999999999").is_err());
        assert!(Selection::parse("1.5").is_err());
        assert_eq!(Selection::parse("...,...").unwrap_err(), SelectionError::MultipleEllipsis);
        let too_many = Selection::parse("1,2,3").unwrap().resolve(&[4, 4]).unwrap_err();
        assert_eq!(too_many, SelectionError::TooManyItems { items: 3, rank: 2 });
        let out = Selection::parse(":,7").unwrap().resolve(&[4, 5]).unwrap_err();
        assert_eq!(out, SelectionError::IndexOutOfRange { item: 1, dim: 1, index: 7, len: 5 });
        assert!(out.to_string().contains("allowed is -5 to 4"), "{out}");
        assert!(Selection::parse("-6").unwrap().resolve(&[5]).is_err());
        assert!(Selection::parse("0").unwrap().resolve(&[0]).is_err());
    }
}
