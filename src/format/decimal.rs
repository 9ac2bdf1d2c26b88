//! Numbers as text for people and for metrics: seconds, fixed decimals, a
//! float's shortest digits.
//!
//! Written without the standard library's float formatting (`{}` and
//! `{:.1}` on an `f64`), whose digit generators would be a third copy of
//! float printing in the binary next to the one JSON output uses
//! ([`json::write_f64`]); integers are printed the ordinary way.
//!
//! Architecture Invariant: pure; no I/O.

use std::fmt::Write;
use std::time::Duration;

use super::json;

/// A duration in seconds with the fewest decimals that show it exactly:
/// `30`, `0.5`, `1.25`, `0.000001` (where `{}` of `as_secs_f64()` can
/// show `1.1179999999999999`).
pub fn seconds(d: Duration) -> String {
    let mut out = d.as_secs().to_string();
    let nanos = d.subsec_nanos();
    if nanos != 0 {
        let mut frac = format!("{nanos:09}");
        frac.truncate(frac.trim_end_matches('0').len());
        out.push('.');
        out.push_str(&frac);
    }
    out
}

/// `value` rounded to `places` decimals (at most 9), halves away from
/// zero: `fixed(2.04, 1)` is `2.0`, `fixed(0.6, 0)` is `1`. Like
/// `{:.N}`, which rounds the exact binary value half to even; the two
/// differ only on exact halves (`0.25`). Values too large for that many
/// decimals, and non-finite ones, are printed as by [`shortest`].
pub fn fixed(value: f64, places: u32) -> String {
    let places = places.min(9);
    let scale = 10u64.pow(places);
    let scaled = (value.abs() * scale as f64).round();
    if !scaled.is_finite() || scaled >= u64::MAX as f64 {
        return shortest(value);
    }
    let units = scaled as u64;
    let mut out = String::new();
    if value.is_sign_negative() && units != 0 {
        out.push('-');
    }
    let _ = write!(out, "{}", units / scale);
    if places > 0 {
        let _ = write!(out, ".{:0width$}", units % scale, width = places as usize);
    }
    out
}

/// A float's shortest round-trip digits, the way `{}` shows them for
/// ordinary magnitudes (`2`, `0.1`, `-123.456`, `300`); outside
/// 1e-5..1e16 in exponent form (`1e-7`, `1.5e+16`), as JSON output lays it
/// out. Non-finite values are `NaN`, `inf` and `-inf`.
pub fn shortest(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut out = String::new();
    json::write_f64(&mut out, value);
    if out.ends_with(".0") {
        out.truncate(out.len() - 2);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_show_the_exact_decimal() {
        for (d, text) in [
            (Duration::from_secs(30), "30"),
            (Duration::ZERO, "0"),
            (Duration::from_millis(500), "0.5"),
            (Duration::from_millis(1250), "1.25"),
            (Duration::from_micros(1), "0.000001"),
            (Duration::from_nanos(3_000_000_001), "3.000000001"),
        ] {
            assert_eq!(seconds(d), text);
        }
    }

    #[test]
    fn seconds_match_the_standard_formatting_of_whole_milliseconds() {
        for ms in (0..5_000u64).chain([59_999, 60_000, 86_400_000, 123_456_789]) {
            // (Not `{}` of `as_secs_f64()`, which can miss: 1.1179999999999999.)
            let d = Duration::from_millis(ms);
            assert_eq!(seconds(d), format!("{}", ms as f64 / 1000.0), "{ms} ms");
        }
    }

    #[test]
    fn fixed_rounds_to_the_places_asked() {
        assert_eq!(fixed(2.0, 1), "2.0");
        assert_eq!(fixed(2.24, 1), "2.2");
        assert_eq!(fixed(2.26, 1), "2.3");
        assert_eq!(fixed(0.6, 0), "1");
        assert_eq!(fixed(1.49, 0), "1");
        assert_eq!(fixed(0.0, 0), "0");
        assert_eq!(fixed(0.04, 1), "0.0");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(-1.26, 1), "-1.3");
        assert_eq!(fixed(12.5, 3), "12.500");
        assert_eq!(fixed(f64::INFINITY, 1), "inf");
        assert_eq!(fixed(1e300, 1), "1e+300");
    }

    #[test]
    fn fixed_matches_the_standard_formatting_off_exact_halves() {
        for ms in 0..20_000u64 {
            let secs = ms as f64 / 1000.0;
            // 0.25 and the like: `{:.1}` rounds an exact half to even.
            if ms % 100 != 50 {
                assert_eq!(fixed(secs, 1), format!("{secs:.1}"), "{ms} ms");
            }
            if ms % 1000 != 500 {
                assert_eq!(fixed(secs, 0), format!("{secs:.0}"), "{ms} ms");
            }
        }
    }

    #[test]
    fn shortest_matches_the_standard_formatting_for_ordinary_magnitudes() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state);
            let magnitude = x.abs();
            if x.is_finite() && (magnitude == 0.0 || (1e-5..1e15).contains(&magnitude)) {
                let ours = shortest(x);
                // The digits can differ only where two shortest candidates
                // are equally close (JSON output rounds those half to even).
                let theirs = format!("{x}");
                if ours != theirs {
                    assert_eq!(ours.parse::<f64>().unwrap(), x, "{x:e}: {ours} vs {theirs}");
                    assert_eq!(ours.len(), theirs.len(), "{x:e}: {ours} vs {theirs}");
                }
            }
        }
        for (x, text) in [
            (2.0, "2"),
            (0.1, "0.1"),
            (300.0, "300"),
            (0.005, "0.005"),
            (-123.456, "-123.456"),
            (-0.0, "-0"),
            (1e16, "1e+16"),
            (1e-7, "1e-7"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(shortest(x), text);
        }
    }
}
