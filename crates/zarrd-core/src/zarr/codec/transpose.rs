//! The `transpose` codec (array→array): the stored chunk is `A.transpose(order)`.
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/transpose/index.html>.

use serde_json::{Map, Value};

use crate::zarr::copy::strides;
use crate::zarr::json::MetadataError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transpose {
    order: Vec<usize>,
}

impl Transpose {
    pub fn from_config(config: Option<&Map<String, Value>>, rank: usize) -> Result<Self, MetadataError> {
        let bad = |why: &str| MetadataError::invalid("transpose codec", why);
        let Some(Value::Array(items)) = config.and_then(|c| c.get("order")) else {
            return Err(bad("`order` must be a list"));
        };
        let order: Vec<usize> = items
            .iter()
            .map(|v| v.as_u64().map(|v| v as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("`order` must hold integers"))?;
        let mut seen = vec![false; rank];
        if order.len() != rank || !order.iter().all(|&i| i < rank && !std::mem::replace(&mut seen[i], true)) {
            return Err(bad(&format!("`order` {order:?} is not a permutation of 0..{rank}")));
        }
        Ok(Self { order })
    }

    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// `B[i] = A[order[i]]`.
    pub fn encoded_shape(&self, shape: &[u64]) -> Vec<u64> {
        self.order.iter().map(|&i| shape[i]).collect()
    }

    /// Turns the stored (transposed) elements back into a C-order chunk of `shape`.
    pub fn decode(&self, stored: &[u8], shape: &[u64], item: usize) -> Vec<u8> {
        let encoded_strides = strides(&self.encoded_shape(shape));
        // Dimension j of the chunk is dimension inverse[j] of the stored array.
        let mut stride_of = vec![0usize; shape.len()];
        for (i, &j) in self.order.iter().enumerate() {
            stride_of[j] = encoded_strides[i];
        }
        // CodecChain::decode has bounded the size of `shape` before any codec runs.
        let n = crate::zarr::codec::error::element_count(shape).unwrap_or(0) as usize;
        let mut out = vec![0u8; n * item];
        if n == 0 {
            return out;
        }
        let rank = shape.len();
        let mut index = vec![0u64; rank];
        let mut src = 0usize;
        for dst in out.chunks_exact_mut(item) {
            dst.copy_from_slice(&stored[src * item..(src + 1) * item]);
            // Advance the C-order odometer, keeping the stored offset in step.
            let mut d = rank;
            while d > 0 {
                d -= 1;
                index[d] += 1;
                src += stride_of[d];
                if index[d] < shape[d] {
                    break;
                }
                src -= stride_of[d] * shape[d] as usize;
                index[d] = 0;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inverts_a_3d_permutation() {
        // A has shape (2,3,4) with A[i,j,k] = 100i+10j+k; order (2,0,1) stores B[k,i,j].
        let t = Transpose::from_config(json!({"order": [2, 0, 1]}).as_object(), 3).unwrap();
        assert_eq!(t.encoded_shape(&[2, 3, 4]), [4, 2, 3]);
        let mut stored = Vec::new();
        for k in 0..4u16 {
            for i in 0..2u16 {
                for j in 0..3u16 {
                    stored.extend((100 * i + 10 * j + k).to_le_bytes());
                }
            }
        }
        let out = t.decode(&stored, &[2, 3, 4], 2);
        let values: Vec<u16> = out.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        let expected: Vec<u16> =
            (0..2).flat_map(|i| (0..3).flat_map(move |j| (0..4).map(move |k| 100 * i + 10 * j + k))).collect();
        assert_eq!(values, expected);
    }

    #[test]
    fn rejects_non_permutations() {
        for order in [json!([0, 0]), json!([0]), json!([0, 2]), json!("01")] {
            assert!(Transpose::from_config(json!({"order": order}).as_object(), 2).is_err(), "{order}");
        }
    }
}
