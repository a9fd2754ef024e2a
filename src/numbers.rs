//! Numbers as text, for every body that writes them (JSON, CSV, CoverageJSON, GeoJSON): the
//! shortest form that reads back as the same value of its type — ryu for floats (float32
//! and float16 in float32's shortest form), itoa for integers. What is not finite is
//! written as the caller's `missing` (`null` in JSON, an empty field in CSV).

use zarrd_core::zarr::data_type::DataType;

/// `v` as a float: in float32's shortest form when `single`, else float64's.
pub fn float(out: &mut String, v: f64, single: bool, missing: &str) {
    if !v.is_finite() {
        out.push_str(missing);
    } else if single {
        out.push_str(ryu::Buffer::new().format_finite(v as f32));
    } else {
        out.push_str(ryu::Buffer::new().format_finite(v));
    }
}

/// `v`, a value decoded as `decoded`: an integer type's as an integer, float32's and
/// float16's in float32's shortest form, others in float64's.
pub fn decoded(out: &mut String, v: f64, decoded: DataType, missing: &str) {
    if v.is_finite() && !decoded.is_float() {
        out.push_str(itoa::Buffer::new().format(v as i64));
    } else {
        float(out, v, matches!(decoded, DataType::Float32 | DataType::Float16), missing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_as_their_values() {
        let text = |v: f64, t: DataType| {
            let mut out = String::new();
            decoded(&mut out, v, t, "null");
            out
        };
        assert_eq!(text(0.1f32.into(), DataType::Float32), "0.1", "float32's shortest, not 0.10000000149011612");
        assert_eq!(text(0.1, DataType::Float64), "0.1");
        assert_eq!(text(f64::from(0.1f32), DataType::Float64), "0.10000000149011612");
        assert_eq!(text(-7.0, DataType::Int16), "-7");
        assert_eq!(text(285.0, DataType::Float64), "285.0");
        assert_eq!(text(f64::NAN, DataType::Float32), "null");
        assert_eq!(text(f64::INFINITY, DataType::Int32), "null");
    }
}
