//! zarr-python 3.4's `cast_value` (zarr-extensions; cast-value-rs does zarr-python's casts):
//! elements stored as another integer or float type, converted back on reading with the
//! configured `rounding` (`nearest-even` by default, `towards-zero`, `towards-positive`,
//! `towards-negative`, `nearest-away`) and `out_of_range` (none: an error; `clamp`; `wrap`,
//! integers only), after the `scalar_map`'s `decode` pairs (a stored sentinel read as NaN).
//! The rules are cast-value-rs's: NaN and infinities never become integers; a float
//! beyond the target's largest finite value is out of range (clamped: ±infinity).

use serde_json::{Map, Value};

use crate::zarr::codec::error::CodecError;
use crate::zarr::codec::numeric::{Kind, NumType, Param, Scalar, int_range, try_map_elements};
use crate::zarr::json::MetadataError;

const CODEC: &str = "cast_value";
/// The most `decode` pairs a scalar map may hold (kept inline: a codec is `Copy`).
const MAX_PAIRS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    NearestEven,
    TowardsZero,
    TowardsPositive,
    TowardsNegative,
    NearestAway,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRange {
    Error,
    Clamp,
    Wrap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CastValue {
    /// The elements read back (the array's, or the next filter's).
    pub decoded: NumType,
    /// The elements as stored.
    pub stored: NumType,
    rounding: Rounding,
    out_of_range: OutOfRange,
    /// `decode` pairs: a stored value and the value it reads as.
    pairs: [(Param, Param); MAX_PAIRS],
    len: usize,
}

impl CastValue {
    pub fn from_config(config: Option<&Map<String, Value>>, decoded: NumType) -> Result<Self, MetadataError> {
        let config =
            config.ok_or_else(|| MetadataError::invalid(CODEC, "a configuration with `data_type` is needed"))?;
        let real = |t: NumType| matches!(t.kind, Kind::Int | Kind::UInt | Kind::Float);
        if !real(decoded) {
            return Err(MetadataError::Unsupported(format!("cast_value on `{}` data", decoded.data_type().name())));
        }
        let stored = match config.get("data_type") {
            Some(Value::String(name)) => {
                NumType::from_config(config, CODEC, "data_type")?.filter(|t| real(*t)).ok_or_else(|| {
                    MetadataError::Unsupported(format!("cast_value to `{name}` (integers and floats of 8 to 64 bits)"))
                })?
            }
            _ => return Err(MetadataError::invalid(CODEC, "`data_type` is not a data type name")),
        };
        let text = |key: &str| config.get(key).filter(|v| !v.is_null());
        let rounding = match text("rounding").map(|v| v.as_str()) {
            None | Some(Some("nearest-even")) => Rounding::NearestEven,
            Some(Some("towards-zero")) => Rounding::TowardsZero,
            Some(Some("towards-positive")) => Rounding::TowardsPositive,
            Some(Some("towards-negative")) => Rounding::TowardsNegative,
            Some(Some("nearest-away")) => Rounding::NearestAway,
            Some(_) => {
                return Err(MetadataError::invalid(
                    CODEC,
                    "`rounding` is not nearest-even, towards-zero, towards-positive, towards-negative or nearest-away",
                ));
            }
        };
        let out_of_range = match text("out_of_range").map(|v| v.as_str()) {
            None => OutOfRange::Error,
            Some(Some("clamp")) => OutOfRange::Clamp,
            // zarr-python checks wrap against the type written (the stored one).
            Some(Some("wrap")) if stored.kind != Kind::Float => OutOfRange::Wrap,
            Some(Some("wrap")) => {
                return Err(MetadataError::invalid(CODEC, "`out_of_range` wrap is for integer types only"));
            }
            Some(_) => return Err(MetadataError::invalid(CODEC, "`out_of_range` is not clamp or wrap")),
        };
        let mut codec = Self {
            decoded,
            stored,
            rounding,
            out_of_range,
            pairs: [(Param::Int(0), Param::Int(0)); MAX_PAIRS],
            len: 0,
        };
        if let Some(map) = text("scalar_map") {
            let pairs = match map.get("decode") {
                None | Some(Value::Null) => &[][..],
                Some(Value::Array(pairs)) => pairs.as_slice(),
                Some(_) => return Err(MetadataError::invalid(CODEC, "`scalar_map.decode` is not a list of pairs")),
            };
            if pairs.len() > MAX_PAIRS {
                return Err(MetadataError::Unsupported(format!(
                    "a scalar_map of {} decode pairs (at most {MAX_PAIRS})",
                    pairs.len()
                )));
            }
            for pair in pairs {
                let Some([from, to]) = pair.as_array().and_then(|p| <&[Value; 2]>::try_from(p.as_slice()).ok()) else {
                    return Err(MetadataError::invalid(
                        CODEC,
                        &format!("scalar_map pair {pair} is not [stored, read]"),
                    ));
                };
                codec.pairs[codec.len] = (
                    Param::of_json(from, stored, "scalar_map decode key", CODEC)?,
                    Param::of_json(to, decoded, "scalar_map decode value", CODEC)?,
                );
                codec.len += 1;
            }
        }
        Ok(codec)
    }

    /// The same codec on elements stored in another byte order.
    pub fn retyped(self, f: impl Fn(NumType) -> NumType) -> Self {
        Self { decoded: f(self.decoded), stored: f(self.stored), ..self }
    }

    pub fn decode(self, input: &[u8], max_len: usize) -> Result<Vec<u8>, CodecError> {
        try_map_elements(input, self.stored, self.decoded, max_len, CODEC, |v| {
            if let Some((_, to)) = self.pairs[..self.len].iter().find(|(from, _)| same(from.scalar(), v)) {
                return Ok(to.scalar());
            }
            cast(v, self.decoded, self.rounding, self.out_of_range)
        })
    }
}

/// Whether two scalars are the same value (any NaN is NaN; as a Python dict finds a key,
/// 0.0 is −0.0).
#[allow(clippy::float_cmp)] // exact equality is the question
fn same(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::Int(a), Scalar::Int(b)) => a == b,
        (Scalar::Float(a), Scalar::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
        _ => false,
    }
}

/// `v` as a value of `to`, rounded and kept in range as configured.
pub fn cast(v: Scalar, to: NumType, rounding: Rounding, out_of_range: OutOfRange) -> Result<Scalar, String> {
    let name = to.data_type().name();
    match (to.kind, v) {
        (Kind::Float, Scalar::Float(f)) if !f.is_finite() => Ok(v),
        (Kind::Float, _) => {
            let max = max_finite(to.size);
            let magnitude = match v {
                Scalar::Int(i) => i.unsigned_abs() as f64,
                Scalar::Float(f) => f.abs(),
            };
            if magnitude > max {
                let negative = matches!(v, Scalar::Int(i) if i < 0) || matches!(v, Scalar::Float(f) if f < 0.0);
                return match out_of_range {
                    OutOfRange::Clamp => Ok(Scalar::Float(if negative { f64::NEG_INFINITY } else { f64::INFINITY })),
                    _ => Err(format!("{} is outside the range of {name}", show(v))),
                };
            }
            Ok(Scalar::Float(round_float(v, to.size, rounding)))
        }
        (_, Scalar::Float(f)) if !f.is_finite() => Err(format!("{f} cannot be cast to {name} without a scalar_map")),
        (_, v) => {
            let whole = match v {
                Scalar::Int(i) => Whole::Exact(i),
                Scalar::Float(f) => Whole::of(round_integer(f, rounding)),
            };
            let (lo, hi) = int_range(to);
            match whole {
                Whole::Exact(i) if (lo..=hi).contains(&i) => Ok(Scalar::Int(i)),
                _ => match out_of_range {
                    OutOfRange::Clamp => Ok(Scalar::Int(if whole.negative() { lo } else { hi })),
                    OutOfRange::Wrap => Ok(whole.wrapped(to)),
                    OutOfRange::Error => Err(format!("{} is outside the range of {name}", show(v))),
                },
            }
        }
    }
}

/// A whole number: exact, or a float too large for an `i128`.
#[derive(Clone, Copy)]
enum Whole {
    Exact(i128),
    Huge(f64),
}

impl Whole {
    fn of(f: f64) -> Self {
        if f.abs() < 1.0e38 { Self::Exact(f as i128) } else { Self::Huge(f) }
    }

    fn negative(self) -> bool {
        match self {
            Self::Exact(i) => i < 0,
            Self::Huge(f) => f < 0.0,
        }
    }

    /// Modulo 2^bits, as two's complement keeps it.
    fn wrapped(self, to: NumType) -> Scalar {
        let bits = 8 * to.size as u32;
        let modulus = 1i128 << bits;
        let r = match self {
            Self::Exact(i) => i.rem_euclid(modulus),
            // Float remainders are exact.
            Self::Huge(f) => f.rem_euclid(modulus as f64) as i128,
        };
        let signed = to.kind == Kind::Int && r >= modulus / 2;
        Scalar::Int(if signed { r - modulus } else { r })
    }
}

fn show(v: Scalar) -> String {
    match v {
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => f.to_string(),
    }
}

fn round_integer(f: f64, rounding: Rounding) -> f64 {
    match rounding {
        Rounding::NearestEven => f.round_ties_even(),
        Rounding::TowardsZero => f.trunc(),
        Rounding::TowardsPositive => f.ceil(),
        Rounding::TowardsNegative => f.floor(),
        Rounding::NearestAway => f.round(),
    }
}

fn max_finite(size: usize) -> f64 {
    match size {
        2 => half::f16::MAX.to_f64(),
        4 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// The nearest value of a float of `size` bytes to `v` (ties to even), as an `f64`.
fn nearest(v: Scalar, size: usize) -> f64 {
    match (v, size) {
        (Scalar::Int(i), 8) => i as f64,
        (Scalar::Int(i), 4) => f64::from(i as f32),
        // Through float32: 24 bits hold every float16 tie exactly, so the second rounding is
        // the correct one.
        (Scalar::Int(i), _) => half::f16::from_f32(i as f32).to_f64(),
        (Scalar::Float(f), 8) => f,
        (Scalar::Float(f), 4) => f64::from(f as f32),
        (Scalar::Float(f), _) => half::f16::from_f64(f).to_f64(),
    }
}

/// The next float of `size` bytes after `c` (a value of that size) towards +∞ or −∞.
fn step(c: f64, size: usize, up: bool) -> f64 {
    match size {
        8 => {
            if up {
                c.next_up()
            } else {
                c.next_down()
            }
        }
        4 => f64::from(if up { (c as f32).next_up() } else { (c as f32).next_down() }),
        _ => {
            let bits = half::f16::from_f64(c).to_bits();
            let (sign, magnitude) = (bits & 0x8000 != 0, bits & 0x7fff);
            // Away from zero is one more magnitude step, towards it one less (−0 and +0 meet).
            let away = up != sign;
            let next = match (away, magnitude) {
                (true, _) => bits + 1,
                (false, 0) => 0x8001 ^ if sign { 0x8000 } else { 0 },
                (false, _) => bits - 1,
            };
            half::f16::from_bits(next).to_f64()
        }
    }
}

/// `v` rounded to a float of `size` bytes as `rounding` says.
fn round_float(v: Scalar, size: usize, rounding: Rounding) -> f64 {
    let c = nearest(v, size);
    // How the candidate compares with the exact value (integers compare exactly: a float
    // that rounds an integer is a whole number, or the integer itself).
    let order = match v {
        Scalar::Int(i) => (c as i128).cmp(&i),
        Scalar::Float(f) => c.partial_cmp(&f).unwrap_or(std::cmp::Ordering::Equal),
    };
    let (lo, hi) = match order {
        std::cmp::Ordering::Equal => return c,
        std::cmp::Ordering::Less => (c, step(c, size, true)),
        std::cmp::Ordering::Greater => (step(c, size, false), c),
    };
    let positive = match v {
        Scalar::Int(i) => i > 0,
        Scalar::Float(f) => f > 0.0,
    };
    match rounding {
        Rounding::NearestEven => c,
        Rounding::TowardsZero => {
            if positive {
                lo
            } else {
                hi
            }
        }
        Rounding::TowardsPositive => hi,
        Rounding::TowardsNegative => lo,
        Rounding::NearestAway => {
            let exact = |x: f64| match v {
                Scalar::Int(i) => (x - i as f64).abs(),
                Scalar::Float(f) => (x - f).abs(),
            };
            let (dl, dh) = (exact(lo), exact(hi));
            // A tie goes away from zero.
            match dl.total_cmp(&dh) {
                std::cmp::Ordering::Less => lo,
                std::cmp::Ordering::Equal if !positive => lo,
                _ => hi,
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact expected values
mod tests {
    use super::*;
    use serde_json::json;

    fn t(s: &str) -> NumType {
        NumType::parse(s).unwrap()
    }

    /// cast-value-rs 0.5.1's answers (`cast_array` in the chroot of `setup_geo.sh`).
    #[test]
    fn casts_as_cast_value_rs_does() {
        let f = |x: f64| Scalar::Float(x);
        let value = |r: Result<Scalar, String>| match r.unwrap() {
            Scalar::Int(i) => i as f64,
            Scalar::Float(x) => x,
        };
        let (ne, oor) = (Rounding::NearestEven, OutOfRange::Error);
        assert!(cast(f(1e40), t("<f4"), ne, oor).is_err());
        assert_eq!(value(cast(f(-1e40), t("<f4"), ne, OutOfRange::Clamp)), f64::NEG_INFINITY);
        assert!(value(cast(f(f64::NAN), t("<f4"), ne, oor)).is_nan());
        assert!(cast(f(f64::NAN), t("<i4"), ne, OutOfRange::Clamp).is_err());
        assert_eq!(value(cast(f(-2.5), t("<i4"), ne, oor)), -2.0);
        assert_eq!(value(cast(f(-2.5), t("<i4"), Rounding::NearestAway, oor)), -3.0);
        assert_eq!(value(cast(Scalar::Int(16_777_217), t("<f4"), Rounding::TowardsZero, oor)), 16_777_216.0);
        assert_eq!(value(cast(Scalar::Int(16_777_217), t("<f4"), Rounding::TowardsPositive, oor)), 16_777_218.0);
        assert_eq!(value(cast(Scalar::Int(2_147_483_647), t("<f4"), ne, oor)), 2_147_483_648.0);
        assert!(cast(f(2_147_483_648.0), t("<i4"), ne, oor).is_err());
        assert_eq!(value(cast(f(2_147_483_648.0), t("<i4"), ne, OutOfRange::Clamp)), 2_147_483_647.0);
        assert_eq!(value(cast(Scalar::Int(300), t("|u1"), ne, OutOfRange::Wrap)), 44.0);
        assert_eq!(value(cast(Scalar::Int(-1), t("|u1"), ne, OutOfRange::Wrap)), 255.0);
        assert_eq!(value(cast(f(1.000_000_1), t("<f2"), Rounding::TowardsPositive, oor)), 1.000_976_562_5);
        assert!(cast(f(65520.0), t("<f2"), ne, oor).is_err());
        assert_eq!(value(cast(f(1e-50), t("<f4"), Rounding::TowardsPositive, oor)), f64::from(f32::from_bits(1)));
        assert_eq!(value(cast(f(-1e-50), t("<f4"), Rounding::TowardsPositive, oor)).to_bits(), (-0.0f64).to_bits());
        assert_eq!(value(cast(f(-2.7), t("|u1"), ne, OutOfRange::Wrap)), 253.0);
        assert_eq!(value(cast(f(300.7), t("|u1"), ne, OutOfRange::Wrap)), 45.0);
    }

    #[test]
    fn the_scalar_map_comes_first() {
        let config = json!({"data_type": "uint16", "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}});
        let c = CastValue::from_config(config.as_object(), t("<f4")).unwrap();
        let out = c.decode(&[0, 0, 5, 0], 8).unwrap();
        let got: Vec<f32> = out.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert!(got[0].is_nan() && got[1] == 5.0, "{got:?}");
        assert!(c.decode(&[0, 0, 5, 0], 4).is_err(), "bounded output");
    }

    #[test]
    fn bad_configurations_name_what_is_wrong() {
        let bad = |config: Value, ty: &str| CastValue::from_config(config.as_object(), t(ty)).unwrap_err().to_string();
        assert!(bad(json!({}), "<f4").contains("data_type"));
        assert!(bad(json!({"data_type": "string"}), "<f4").contains("string"));
        assert!(bad(json!({"data_type": "uint8", "rounding": "up"}), "<f4").contains("rounding"));
        assert!(bad(json!({"data_type": "float16", "out_of_range": "wrap"}), "<f4").contains("integer types only"));
        assert!(bad(json!({"data_type": "uint8", "scalar_map": {"decode": [[300, 1]]}}), "<f4").contains("decode key"));
        let many: Vec<Value> = (0..5).map(|i| json!([i, i])).collect();
        assert!(bad(json!({"data_type": "uint8", "scalar_map": {"decode": many}}), "<f4").contains("at most 4"));
        assert!(CastValue::from_config(None, t("<f4")).is_err());
    }
}
