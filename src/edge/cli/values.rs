//! The parsers of option values: strings, byte sizes, counts, seconds and
//! `--pool-replicas` entries, each with its usage error.

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
pub(super) fn byte_size(text: &str, option: &str) -> Result<usize, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "invalid value '{text}' for '{option}': expected a number of bytes, optionally with k, m or g (KiB, MiB, GiB)"
        ))
    };
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
        return Err(CliError::Usage(format!(
            "invalid value '{text}' for '{option}': 0 would refuse every request body"
        )));
    }
    number.checked_mul(1usize << shift).ok_or_else(bad)
}

/// A whole number of at least `min`.
pub(super) fn count(text: &str, option: &str, min: usize) -> Result<usize, CliError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(CliError::Usage(format!(
            "invalid value '{text}' for '{option}': expected a whole number of at least {min}"
        ))),
    }
}

/// A non-negative number of seconds, fractions allowed.
pub(super) fn seconds(text: &str, option: &str) -> Result<Duration, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "invalid value '{text}' for '{option}': expected a number of seconds (0 or more)"
        ))
    };
    let secs: f64 = text.trim().parse().map_err(|_| bad())?;
    if secs.is_nan() || secs < 0.0 {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

/// `--pool-replicas LANG=N` or `--pool-min LANG=N` (`option`): a pool
/// language and a process count of at least 1.
pub(super) fn lang_count(text: &str, option: &str) -> Result<(String, usize), CliError> {
    let bad = |why: &str| {
        CliError::Usage(format!(
            "invalid value '{text}' for '{option}': {why} (expected <lang>=<n>, e.g. py=4)"
        ))
    };
    let (lang, count) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
    let lang = lang.trim();
    if lang.is_empty() {
        return Err(bad("empty language"));
    }
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| bad("the count is not a whole number"))?;
    if count == 0 {
        return Err(bad("the count must be at least 1"));
    }
    Ok((lang.to_ascii_lowercase(), count))
}
