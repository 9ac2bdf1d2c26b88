//! "Did you mean": the known name closest to a mistyped one.

/// The candidate closest to `typed` by edit distance (insertions,
/// deletions, substitutions and swaps of two neighbours, ignoring case), if
/// it is close enough to be a slip: at most 1 edit for names of up to 4
/// characters, 2 up to 8, 3 beyond. The first of equally close candidates.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    let allowed = match typed.chars().count() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let d = distance(&typed, &candidate.to_ascii_lowercase());
        if d <= allowed && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Optimal string alignment distance between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for swaps), one back, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        for (a, b, d) in [
            ("", "", 0),
            ("abc", "abc", 0),
            ("http-prot", "http-port", 1),
            ("ab", "ba", 1),
            ("kitten", "sitting", 3),
            ("", "abc", 3),
            ("abc", "", 3),
        ] {
            assert_eq!(distance(a, b), d, "{a} {b}");
            assert_eq!(distance(b, a), d, "{b} {a}");
        }
    }

    #[test]
    fn slips_are_matched_and_strangers_are_not() {
        let flags = ["http-port", "http-host", "call-timeout", "help"];
        assert_eq!(closest("http-prot", flags), Some("http-port"));
        assert_eq!(closest("HTTP-PORT", flags), Some("http-port"));
        assert_eq!(closest("htp-host", flags), Some("http-host"));
        assert_eq!(closest("call-timout", flags), Some("call-timeout"));
        assert_eq!(closest("hlep", flags), Some("help"));
        assert_eq!(closest("stdio", flags), None);
        assert_eq!(closest("bogus", flags), None);
        assert_eq!(closest("", flags), None);
        let tools = ["addOne", "add_one"];
        assert_eq!(closest("addone", tools), Some("addOne"));
    }
}
