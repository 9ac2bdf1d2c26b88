//! JSON text primitives: string escaping and float formatting.
//!
//! Tool results are written as JSON text directly from typed values (see
//! [`crate::format::value::to_json`]) instead of going through `serde_json::Value`,
//! because a value may hold integers of any size and floats must keep their
//! exact digits. The output here is byte-identical to what `serde_json`'s
//! compact serializer writes for the same `&str` or `f64`, so a result reads
//! the same whichever path produced it.
//!
//! Floats are printed with the shortest digits that round-trip, laid out as
//! `serde_json` 1.0.15x does: plain decimal when the decimal exponent is in
//! -5..=15 (integral values get `.0`), otherwise `d.ddde+N` / `d.ddde-N`.
//! The reference runtime first prints with C `%.15g`, which loses digits
//! (`2.0` shows as `2`); we do not copy that.
//!
//! [`scan`] reads JSON text without allocating (large tool arguments).
//!
//! Architecture Invariant: pure; no I/O.

pub mod check;
pub mod page;
pub mod scan;

/// Appends `s` as a JSON string literal, quotes included: `"` and `\` are
/// escaped, control characters become `\b \t \n \f \r` or `\u00xx`
/// (lowercase hex), everything else (including `/`, DEL and non-ASCII) is
/// copied raw.
pub fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    write_str_body(out, s);
    out.push('"');
}

/// [`write_str`] without the quotes: what goes between them. A string cut
/// into pieces at character boundaries gives, piece by piece, the same
/// bytes as whole.
pub fn write_str_body(out: &mut String, s: &str) {
    escape_body(s, |piece| out.push_str(piece));
}

/// [`write_str_body`] into bytes (a message being written).
pub fn write_str_body_into(out: &mut Vec<u8>, s: &str) {
    escape_body(s, |piece| out.extend_from_slice(piece.as_bytes()));
}

/// The escaped body of `s`, given to `push` in pieces.
fn escape_body(s: &str, mut push: impl FnMut(&str)) {
    const HEX: [&str; 16] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f",
    ];
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Only ASCII bytes are split on, so both slices are valid UTF-8.
        push(&s[start..i]);
        if escape.is_empty() {
            push("\\u00");
            push(HEX[(b >> 4) as usize]);
            push(HEX[(b & 0xf) as usize]);
        } else {
            push(escape);
        }
        start = i + 1;
    }
    push(&s[start..]);
}

/// The length of [`write_str_body`]'s output for `s`, without writing it.
pub fn str_body_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0c | b'\r' => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

/// `value` as compact JSON text (for messages: `got {}`), as its
/// `Display` prints it. Through the serializer the server's output
/// already uses: `{}` on a `Value` would add two more (compact and pretty,
/// writing to a `fmt::Write`), about 13 KB of code.
pub fn text(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Parses JSON bytes with the parser text goes through
/// (`serde_json::from_str`): `from_slice` compiles a second whole parser,
/// about 11 KB of code. The error is serde_json's, or names the first byte
/// that is not UTF-8 (JSON text is UTF-8).
pub fn parse_bytes(bytes: &[u8]) -> Result<serde_json::Value, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("invalid UTF-8 at byte {}", e.valid_up_to()))?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Appends a finite `f64` in shortest round-trip form (`2.0`, `0.1`,
/// `1e+16`, `1e-6`, `-0.0`). Non-finite values must be handled by the
/// caller (JSON has no literal for them); they print as `null` here.
pub fn write_f64(out: &mut String, x: f64) {
    // The digits come from serde_json itself: when two shortest candidates
    // are equally close (1658206780088562.25) it rounds half to even, where
    // Rust's `{:e}` rounds up, and results must match the rest of our JSON.
    match serde_json::to_string(&x) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("null"),
    }
}

/// Appends a finite `f32` (an `f4` value) with the shortest digits that
/// round-trip through `f32`, laid out by the `f64` rules of [`write_f64`].
/// So `0.1f32` prints as `0.1` (not `0.10000000149011612`), and the text,
/// read as an `f64`, is exactly what [`write_f64`] would print for it.
pub fn write_f32(out: &mut String, x: f32) {
    let Ok(text) = serde_json::to_string(&x) else {
        out.push_str("null");
        return;
    };
    // serde_json lays f32 out with a different fixed-notation range
    // (1e-6 prints as 0.000001); re-lay the digits with the f64 rules.
    let (negative, digits, exp) = split_decimal(&text);
    lay_out(out, negative, &digits, exp);
}

/// Splits decimal text (`-12.5`, `0.00012`, `1.5e+16`, `1e-7`) into sign,
/// significant digits without leading or trailing zeros (`"0"` for zero),
/// and the decimal exponent of the first digit.
fn split_decimal(text: &str) -> (bool, String, i32) {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = int_part.chars().chain(frac_part.chars()).collect();
    let leading = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_start_matches('0').trim_end_matches('0');
    if digits.is_empty() {
        return (negative, "0".into(), 0);
    }
    // The first significant digit sits `int_part.len() - 1 - leading`
    // places left of the point.
    let first = int_part.len() as i32 - 1 - leading as i32 + exp;
    (negative, digits.to_string(), first)
}

/// Writes `0.d1d2d3... x 10^(exp+1)` the way serde_json lays out an f64:
/// plain decimal for exponents -5..=15, scientific otherwise.
fn lay_out(out: &mut String, negative: bool, digits: &str, exp: i32) {
    if negative {
        out.push('-');
    }
    if digits == "0" {
        out.push_str("0.0");
        return;
    }
    let n = digits.len() as i32;
    if (-5..=15).contains(&exp) {
        if n - 1 <= exp {
            // 1234e7 -> 12340000000.0
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', (exp - (n - 1)) as usize));
            out.push_str(".0");
        } else if exp >= 0 {
            // 1234e-2 -> 12.34
            let point = (exp + 1) as usize;
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        } else {
            // 1234e-6 -> 0.001234
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(digits);
        }
        return;
    }
    out.push_str(&digits[..1]);
    if n > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp >= 0 { '+' } else { '-' });
    out.push_str(&exp.unsigned_abs().to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_parse_as_their_text_does_and_non_utf8_is_named() {
        let text = r#"{"a":[1,-2.5e3,"x\u00e9y"],"b":null}"#;
        assert_eq!(
            parse_bytes(text.as_bytes()),
            Ok(serde_json::from_str::<serde_json::Value>(text).unwrap())
        );
        let err = serde_json::from_str::<serde_json::Value>("{\"a\":").unwrap_err();
        assert_eq!(parse_bytes(b"{\"a\":"), Err(err.to_string()));
        assert_eq!(
            parse_bytes(b"[\"ab\xff\"]"),
            Err("invalid UTF-8 at byte 4".into())
        );
    }

    fn f64_text(x: f64) -> String {
        let mut out = String::new();
        write_f64(&mut out, x);
        out
    }

    #[track_caller]
    fn check_f64(x: f64, expected: &str) {
        assert_eq!(f64_text(x), expected, "{x:e}");
        assert_eq!(
            serde_json::to_string(&x).unwrap(),
            expected,
            "serde_json disagrees on {x:e}"
        );
    }

    #[test]
    fn floats_match_documented_examples() {
        check_f64(2.0, "2.0");
        check_f64(0.1, "0.1");
        check_f64(1e15, "1000000000000000.0");
        check_f64(1e16, "1e+16");
        check_f64(1e-5, "0.00001");
        check_f64(1e-6, "1e-6");
        check_f64(-0.0, "-0.0");
        check_f64(0.0, "0.0");
        check_f64(1.0 / 3.0, "0.3333333333333333");
        check_f64(12345678901234567.0, "1.2345678901234568e+16");
        check_f64(1.5e300, "1.5e+300");
        check_f64(f64::MAX, "1.7976931348623157e+308");
        check_f64(f64::MIN_POSITIVE, "2.2250738585072014e-308");
        check_f64(5e-324, "5e-324");
        check_f64(-123.456, "-123.456");
        check_f64(100.0, "100.0");
        check_f64(1e20, "1e+20");
    }

    /// A small deterministic generator (xorshift) so the comparison covers
    /// many bit patterns without a dependency.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// The f64 layout rules, applied to serde_json's own digits, reproduce
    /// serde_json's f64 text: this is what makes `write_f32` consistent.
    #[track_caller]
    fn check_layout(x: f64) {
        let text = serde_json::to_string(&x).unwrap();
        let (negative, digits, exp) = split_decimal(&text);
        let mut out = String::new();
        lay_out(&mut out, negative, &digits, exp);
        assert_eq!(out, text, "{:016x}", x.to_bits());
    }

    #[test]
    fn floats_match_serde_json_on_random_bit_patterns() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            let x = f64::from_bits(xorshift(&mut state));
            if x.is_finite() {
                check_layout(x);
            }
        }
        // Values with few significant digits over the whole exponent range,
        // where the fixed/exponent switch happens.
        for exp in -330..=310 {
            for mantissa in [1.0, 1.5, 9.999, 123.0, 7.0] {
                let x: f64 = format!("{mantissa}e{exp}").parse().unwrap();
                if x.is_finite() {
                    check_layout(x);
                    check_layout(-x);
                }
            }
        }
    }

    #[test]
    fn f32_uses_its_own_shortest_digits() {
        let text = |x: f32| {
            let mut out = String::new();
            write_f32(&mut out, x);
            out
        };
        assert_eq!(text(0.1), "0.1");
        assert_eq!(text(16777216.0), "16777216.0");
        assert_eq!(text(1e-6), "1e-6");
        assert_eq!(text(3.4028235e38), "3.4028235e+38");
        assert_eq!(text(std::f32::consts::PI), "3.1415927");
        // The digits always agree with serde_json's own f32 output.
        let mut state = 0x1234_5678_9abc_def1;
        for _ in 0..100_000 {
            let x = f32::from_bits(xorshift(&mut state) as u32);
            if x.is_finite() {
                let ours: f64 = text(x).parse().unwrap();
                let theirs: f64 = serde_json::to_string(&x).unwrap().parse().unwrap();
                assert_eq!(ours.to_bits(), theirs.to_bits(), "{:08x}", x.to_bits());
                assert_eq!(ours as f32, x);
            }
        }
    }

    #[track_caller]
    fn check_str(s: &str, expected: &str) {
        let mut out = String::new();
        write_str(&mut out, s);
        assert_eq!(out, expected);
        assert_eq!(serde_json::to_string(s).unwrap(), expected);
    }

    #[test]
    fn strings_match_serde_json() {
        check_str("", "\"\"");
        check_str("plain", "\"plain\"");
        check_str("a\"b\\c/d", "\"a\\\"b\\\\c/d\"");
        check_str("\u{8}\u{c}\n\r\t", "\"\\b\\f\\n\\r\\t\"");
        check_str("\u{0}\u{1}\u{1f}\u{7f}", "\"\\u0000\\u0001\\u001f\u{7f}\"");
        check_str("é€😀\u{2028}", "\"é€😀\u{2028}\"");
        let all: String = (0u32..0x300).filter_map(char::from_u32).collect();
        check_str(&all, &serde_json::to_string(&all).unwrap());
    }
}
