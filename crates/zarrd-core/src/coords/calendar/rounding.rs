//! How a stored time value becomes whole microseconds, as cftime rounds it. A leaf.

use std::cmp::Ordering;

const SECOND_US: i64 = 1_000_000;

/// `value × factor` rounded to an integer as cftime rounds it, computed exactly (an f64 is
/// `mantissa × 2^exponent`), or None when it is not finite or does not fit in an `i64`.
pub(super) fn scaled_micros(value: f64, factor: i64) -> Option<i64> {
    if !value.is_finite() {
        return None;
    }
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = if exponent == 0 { (fraction, -1074) } else { (fraction | 1 << 52, exponent - 1075) };
    // Below 2^90: a 53-bit mantissa times a factor below 2^37.
    let product = u128::from(mantissa) * u128::from(factor.unsigned_abs());
    // |value × factor| = whole + a remainder, compared with one half (None: no remainder).
    let (whole, remainder) = if exponent >= 0 {
        if product != 0 && 128 - product.leading_zeros() + exponent.unsigned_abs() > 64 {
            return None;
        }
        (product << exponent, None)
    } else if exponent < -100 {
        (0, (product != 0).then_some(Ordering::Less))
    } else {
        let shift = exponent.unsigned_abs();
        let rest = product & ((1 << shift) - 1);
        (product >> shift, (rest != 0).then(|| rest.cmp(&(1 << (shift - 1)))))
    };
    let whole = whole as i128;
    let up = match remainder {
        Some(Ordering::Greater) => 1,
        Some(Ordering::Equal) => whole & 1,
        _ => 0,
    };
    let fractional = i128::from(remainder.is_some());
    let (nearest, floor, ceil) = if value.is_sign_negative() {
        (-(whole + up), -(whole + fractional), -whole)
    } else {
        (whole + up, whole, whole + fractional)
    };
    // cftime (issue #187): 1 µs off a whole second is float error in units of a second or more.
    let rounded = match nearest.rem_euclid(i128::from(SECOND_US)) {
        1 if factor >= SECOND_US => floor,
        999_999 if factor >= SECOND_US => ceil,
        _ => nearest,
    };
    i64::try_from(rounded).ok()
}
