//! The parsers of option values: strings, byte sizes, counts, seconds and
//! `<lang>=<n>` entries. Each error says why the value is bad; the caller
//! names the option and the value (`settings::Flag::apply`).

use std::time::Duration;

use super::{usage, CliError};

pub(super) fn string_value(
    parser: &mut lexopt::Parser,
    option: &str,
    command: &str,
) -> Result<String, CliError> {
    let value = parser.value().map_err(|e| usage(e, Some(command)))?;
    value
        .into_string()
        .map_err(|v| CliError::Usage(format!("value {v:?} for '{option}' is not valid UTF-8")))
}

/// A byte count: digits, optionally followed by `k`, `m` or `g` (KiB, MiB,
/// GiB; any case, an optional `b` or `ib` after it).
pub(super) fn byte_size(text: &str) -> Result<usize, String> {
    let bad =
        || "expected a number of bytes, optionally with k, m or g (KiB, MiB, GiB)".to_string();
    let lower = text.trim().to_ascii_lowercase();
    let unit_text = lower
        .trim_end_matches("ib")
        .trim_end_matches('b')
        .to_string();
    let (digits, shift) = match unit_text.chars().last() {
        Some('k') => (&unit_text[..unit_text.len() - 1], 10),
        Some('m') => (&unit_text[..unit_text.len() - 1], 20),
        Some('g') => (&unit_text[..unit_text.len() - 1], 30),
        _ => (unit_text.as_str(), 0),
    };
    let number: usize = digits.trim().parse().map_err(|_| bad())?;
    if number == 0 {
        return Err("0 would refuse every request body".into());
    }
    number.checked_mul(1usize << shift).ok_or_else(bad)
}

/// A whole number of at least `min`.
pub(super) fn count(text: &str, min: usize) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!("expected a whole number of at least {min}")),
    }
}

/// A non-negative number of seconds, fractions allowed.
pub(super) fn seconds(text: &str) -> Result<Duration, String> {
    let bad = || "expected a number of seconds (0 or more)".to_string();
    let secs: f64 = text.trim().parse().map_err(|_| bad())?;
    if secs.is_nan() || secs < 0.0 {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

/// `<lang>=<n>`: a pool language (by its canonical name, see
/// `format::lang`) and a process count of at least `min`.
pub(super) fn lang_count(text: &str, min: usize) -> Result<(String, usize), String> {
    let bad = |why: &str| format!("{why} (expected <lang>=<n>, e.g. py=4)");
    let (lang, count) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
    let lang = lang.trim();
    if lang.is_empty() {
        return Err(bad("empty language"));
    }
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| bad("the count is not a whole number"))?;
    if count < min {
        return Err(bad(&format!("the count must be at least {min}")));
    }
    Ok((crate::format::lang::canonical(lang), count))
}
