//! Which plane of an array an identifier draws: the index fixed on every leading
//! dimension (all but the last two, which are height and width), by position (`[3,0]`) or
//! by axis name (`[t=0,z=12]`), and whether the channel axis is left free to be composited.
//!
//! Arrays must have every leading dimension fixed. OME-Zarr images are forgiving, as
//! viewers expect: a leading axis not named is 0, and an unnamed channel axis is composited.

use crate::error::{Error, Result};
use crate::images::iiif::identifier::Identifier;

/// The plane to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// One index per leading dimension (the channel axis's is 0 when composited).
    pub indices: Vec<u64>,
    /// Whether the channel axis (the leading dimension `channel` names) is composited.
    pub composite: bool,
}

fn name_of(names: &[Option<String>], d: usize) -> String {
    names.get(d).cloned().flatten().unwrap_or_else(|| format!("dim {d}"))
}

/// How an identifier fixes `leading` axes by position: `dataset/path[i,j,…]`.
fn by_position(id: &Identifier, leading: usize) -> String {
    format!("{}/{}[i{}]", id.dataset, id.path, ",j".repeat(leading.saturating_sub(1)))
}

/// Resolves `id`'s fixed axes for an array of `shape` whose dimensions are `names`;
/// `channel` is the channel axis of an OME-Zarr image (`image`), if it has one.
pub fn resolve(
    id: &Identifier,
    shape: &[u64],
    names: &[Option<String>],
    channel: Option<usize>,
    image: bool,
) -> Result<Fixed> {
    let rank = shape.len();
    let leading = rank.saturating_sub(2);
    let mut indices: Vec<Option<u64>> = vec![None; leading];
    if !id.indices.is_empty() {
        if id.indices.len() != leading {
            return Err(Error::BadRequest(format!(
                "`{}` has {rank} dimensions (shape {shape:?}): the identifier must fix the {leading} leading one(s) as {} with 0 <= index < extent, or by name as [{}=i,...], got {} index(es)",
                id.path,
                by_position(id, leading),
                name_of(names, 0),
                id.indices.len()
            )));
        }
        indices = id.indices.iter().map(|&i| Some(i)).collect();
    }
    let known: Vec<String> = (0..leading).map(|d| name_of(names, d)).collect();
    for (axis, index) in &id.named {
        let Some(d) = (0..rank).find(|&d| names.get(d).and_then(Option::as_deref) == Some(axis.as_str())) else {
            return Err(Error::BadRequest(format!(
                "`{}` has no axis named `{axis}`; its leading axes are: {}",
                id.path,
                if known.is_empty() { "none (it is a 2-D image)".to_owned() } else { known.join(", ") }
            )));
        };
        if d >= leading {
            return Err(Error::BadRequest(format!(
                "axis `{axis}` is one of the image's two plane axes (height, width), which cannot be fixed; fix only: {}",
                known.join(", ")
            )));
        }
        indices[d] = Some(*index);
    }
    let composite = image && channel.is_some_and(|c| c < leading && indices[c].is_none());
    if !image && let Some(d) = indices.iter().position(Option::is_none) {
        return Err(Error::BadRequest(format!(
            "`{}` has {rank} dimensions (shape {shape:?}): fix every leading one by position ({}) or by name (`{}` is not fixed); leading axes: {}",
            id.path,
            by_position(id, leading),
            name_of(names, d),
            known.join(", ")
        )));
    }
    let indices: Vec<u64> = indices.into_iter().map(|i| i.unwrap_or(0)).collect();
    for (d, (&i, &n)) in indices.iter().zip(shape).enumerate() {
        if i >= n {
            return Err(Error::NotFound(format!(
                "index {i} of leading axis `{}` is out of range: that axis has extent {n} (0 to {})",
                name_of(names, d),
                n.saturating_sub(1)
            )));
        }
    }
    Ok(Fixed { indices, composite })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<Option<String>> {
        n.iter().map(|s| Some((*s).to_owned())).collect()
    }

    #[test]
    fn images_default_to_zero_and_composite_the_channel_axis() {
        let tczyx = names(&["t", "c", "z", "y", "x"]);
        let shape = [2, 3, 4, 64, 64];
        let id = |t: &str| Identifier::parse(t).unwrap();
        let r = resolve(&id("d/img[t=1,z=2]"), &shape, &tczyx, Some(1), true).unwrap();
        assert_eq!(r, Fixed { indices: vec![1, 0, 2], composite: true });
        let r = resolve(&id("d/img[c=2]"), &shape, &tczyx, Some(1), true).unwrap();
        assert_eq!(r, Fixed { indices: vec![0, 2, 0], composite: false });
        let r = resolve(&id("d/img[1,2,3]"), &shape, &tczyx, Some(1), true).unwrap();
        assert_eq!(r, Fixed { indices: vec![1, 2, 3], composite: false });
        assert!(resolve(&id("d/img"), &shape, &tczyx, Some(1), true).unwrap().composite);
        assert!(matches!(resolve(&id("d/img[q=1]"), &shape, &tczyx, Some(1), true), Err(Error::BadRequest(_))));
        assert!(matches!(resolve(&id("d/img[y=1]"), &shape, &tczyx, Some(1), true), Err(Error::BadRequest(_))));
        assert!(matches!(resolve(&id("d/img[z=4]"), &shape, &tczyx, Some(1), true), Err(Error::NotFound(_))));
        assert!(matches!(resolve(&id("d/img[1,2]"), &shape, &tczyx, Some(1), true), Err(Error::BadRequest(_))));
    }

    #[test]
    fn arrays_fix_every_leading_dimension() {
        let tyx = names(&["time", "y", "x"]);
        let id = |t: &str| Identifier::parse(t).unwrap();
        assert_eq!(resolve(&id("d/a[time=3]"), &[5, 4, 4], &tyx, None, false).unwrap().indices, vec![3]);
        assert_eq!(resolve(&id("d/a[3]"), &[5, 4, 4], &tyx, None, false).unwrap().indices, vec![3]);
        assert!(resolve(&id("d/a"), &[5, 4, 4], &tyx, None, false).is_err());
        assert_eq!(resolve(&id("d/a"), &[4, 4], &tyx[1..], None, false).unwrap().indices, Vec::<u64>::new());
    }
}
