//! A message body checked in slices: [`Checker`] does what
//! `std::str::from_utf8` and [`scan::validate`] do for one JSON-RPC body
//! (the text trimmed of whitespace first, as the decoder trims it), and
//! finds where every container ends ([`scan::Ends`]) in the same pass, a
//! bounded stretch of bytes per [`Checker::step`].
//!
//! The verdict is the one-shot functions' verdict (the grammar is walked in
//! the same order, with an explicit stack instead of recursion), so a
//! reactor can check a large body between other events and then decode it
//! without checking again.
//!
//! Architecture Invariant: pure; no I/O.

use super::scan::{self, Ends, ScanError, SERDE_DEPTH_LIMIT};

/// What a finished check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The body is not UTF-8.
    NotUtf8,
    /// The body is only whitespace.
    Empty,
    /// The trimmed text (a byte range of the body) is not one JSON value.
    Invalid(ScanError),
    /// The trimmed text is one JSON value.
    Valid,
}

/// A check in progress (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Checker {
    /// Bytes known to be UTF-8 (the first pass).
    utf8: usize,
    /// The trimmed text, once the first pass is over.
    span: Option<(usize, usize)>,
    /// Where the walk is, relative to the trimmed text.
    pos: usize,
    state: State,
    /// Open containers: the bracket, and its entry in `spans`.
    open: Vec<(u8, usize)>,
    spans: Vec<(u32, u32)>,
    outcome: Option<Checked>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// A value is due.
    #[default]
    Value,
    /// An object member's key is due.
    Key,
    /// After a value: a comma, the close of the container, or the end.
    After,
}

impl Checker {
    /// Checks on about `bytes` more bytes of `body` (the same body at every
    /// step); the verdict once done.
    pub fn step(&mut self, body: &[u8], bytes: usize) -> Option<Checked> {
        if let Some(done) = &self.outcome {
            return Some(done.clone());
        }
        let mut left = bytes.max(1);
        if self.span.is_none() {
            let upto = body.len().min(self.utf8.saturating_add(left.max(4)));
            match std::str::from_utf8(&body[self.utf8..upto]) {
                Ok(_) => self.utf8 = upto,
                // A character cut at the end of the stretch: on next time.
                Err(e) if e.error_len().is_none() && upto < body.len() => {
                    self.utf8 += e.valid_up_to();
                }
                Err(_) => return self.finish(Checked::NotUtf8),
            }
            if self.utf8 < body.len() {
                return None;
            }
            // The decoder trims Unicode whitespace; in UTF-8 all of it but
            // ASCII is multi-byte, so trim on the text.
            let text = std::str::from_utf8(body).unwrap_or("");
            let trimmed = text.trim_matches(char::is_whitespace);
            if trimmed.is_empty() {
                return self.finish(Checked::Empty);
            }
            let start = trimmed.as_ptr() as usize - text.as_ptr() as usize;
            self.span = Some((start, start + trimmed.len()));
            left = 1;
        }
        let (start, end) = self.span.unwrap_or((0, 0));
        let text = &body[start..end];
        let stop = self.pos.saturating_add(left);
        while self.pos < stop {
            match self.advance(text) {
                Ok(false) => {}
                Ok(true) => return self.finish(Checked::Valid),
                Err(e) => return self.finish(Checked::Invalid(e)),
            }
        }
        None
    }

    /// Where the trimmed text is in the body, once the check is done.
    pub fn span(&self) -> std::ops::Range<usize> {
        let (start, end) = self.span.unwrap_or((0, 0));
        start..end
    }

    /// Where the containers of the trimmed text end (positions in it), once
    /// the check found it valid.
    pub fn ends(&mut self) -> Ends {
        let spans = std::mem::take(&mut self.spans);
        match self.span {
            // As `Ends::new`: no table for texts of 4 GiB or more.
            Some((start, end)) if u32::try_from(end - start).is_err() => Ends::default(),
            _ => Ends::from_spans(spans),
        }
    }

    fn finish(&mut self, outcome: Checked) -> Option<Checked> {
        self.outcome = Some(outcome.clone());
        Some(outcome)
    }

    fn peek(&mut self, text: &[u8]) -> Option<u8> {
        self.pos = scan::skip_ws(text, self.pos);
        text.get(self.pos).copied()
    }

    /// One token of the grammar; true at the end of the whole value.
    fn advance(&mut self, text: &[u8]) -> Result<bool, ScanError> {
        match self.state {
            State::Value => {
                match self.peek(text) {
                    Some(b'n') => self.literal(text, b"null")?,
                    Some(b't') => self.literal(text, b"true")?,
                    Some(b'f') => self.literal(text, b"false")?,
                    Some(b'"') => {
                        self.pos = scan::string_end(text, self.pos).ok_or(ScanError::Syntax)?;
                    }
                    Some(b'-' | b'0'..=b'9') => {
                        self.pos = scan::number_end(text, self.pos).ok_or(ScanError::Syntax)?;
                    }
                    Some(open @ (b'[' | b'{')) => {
                        if self.open.len() + 1 >= SERDE_DEPTH_LIMIT {
                            return Err(ScanError::TooDeep);
                        }
                        let close = if open == b'[' { b']' } else { b'}' };
                        self.open.push((close, self.spans.len()));
                        self.spans.push((self.pos as u32, 0));
                        self.pos += 1;
                        if self.peek(text) == Some(close) {
                            self.close(text);
                            return Ok(false);
                        }
                        if open == b'{' {
                            self.state = State::Key;
                        }
                        return Ok(false);
                    }
                    _ => return Err(ScanError::Syntax),
                }
                self.state = State::After;
                Ok(false)
            }
            State::Key => {
                if self.peek(text) != Some(b'"') {
                    return Err(ScanError::Syntax);
                }
                self.pos = scan::string_end(text, self.pos).ok_or(ScanError::Syntax)?;
                if self.peek(text) != Some(b':') {
                    return Err(ScanError::Syntax);
                }
                self.pos += 1;
                self.state = State::Value;
                Ok(false)
            }
            State::After => {
                let Some(&(close, _)) = self.open.last() else {
                    // The whole value is read: only whitespace may follow.
                    return if scan::skip_ws(text, self.pos) == text.len() {
                        Ok(true)
                    } else {
                        Err(ScanError::Syntax)
                    };
                };
                match self.peek(text) {
                    Some(b',') => {
                        self.pos += 1;
                        self.state = if close == b'}' {
                            State::Key
                        } else {
                            State::Value
                        };
                    }
                    Some(b) if b == close => self.close(text),
                    _ => return Err(ScanError::Syntax),
                }
                Ok(false)
            }
        }
    }

    /// Closes the innermost container at `pos` (its closing bracket).
    fn close(&mut self, _text: &[u8]) {
        self.pos += 1;
        if let Some((_, at)) = self.open.pop() {
            if let Some(span) = self.spans.get_mut(at) {
                span.1 = self.pos as u32;
            }
        }
        self.state = State::After;
    }

    fn literal(&mut self, text: &[u8], word: &[u8]) -> Result<(), ScanError> {
        if text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(ScanError::Syntax)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-shot verdict, as the decoder reaches it.
    fn one_shot(body: &[u8]) -> Checked {
        let Ok(text) = std::str::from_utf8(body) else {
            return Checked::NotUtf8;
        };
        let text = text.trim_matches(char::is_whitespace);
        if text.is_empty() {
            return Checked::Empty;
        }
        match scan::validate(text.as_bytes(), 0) {
            Ok(()) => Checked::Valid,
            Err(e) => Checked::Invalid(e),
        }
    }

    fn checked(body: &[u8], bytes: usize) -> (Checked, Checker) {
        let mut checker = Checker::default();
        for _ in 0..=body.len() * 4 + 8 {
            if let Some(verdict) = checker.step(body, bytes) {
                return (verdict, checker);
            }
        }
        panic!("no verdict for {:?}", String::from_utf8_lossy(body));
    }

    #[test]
    fn every_stretch_gives_the_one_shot_verdict_and_ends() {
        let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let deeper = format!("{}{}", "[".repeat(128), "]".repeat(128));
        let bodies: Vec<Vec<u8>> = [
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,2,{"b":"]"}]}}"#,
            " \n [1, 2.5e3, -0, true, false, null, \"\\u00e9\", {}] \t",
            "\u{a0} {\"k\": []} \u{2003}",
            "",
            "   ",
            "[1,]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "[1] [2]",
            "nul",
            "[\"\\ud800\"]",
            "\"é\"",
            "{\"é\":\"ü\",\"x\":[[],[{}]]}",
            "01",
            "[1 2]",
            "{,}",
            &deep,
            &deeper,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain([vec![b'"', 0xff, b'"'], vec![b'[', 0xc3]])
        .collect();
        for body in &bodies {
            let want = one_shot(body);
            for bytes in (1..=12).chain([100, usize::MAX]) {
                let (got, mut checker) = checked(body, bytes);
                assert_eq!(got, want, "{:?} by {bytes}", String::from_utf8_lossy(body));
                if got == Checked::Valid {
                    let text = &body[checker.span()];
                    let ends = checker.ends();
                    assert_eq!(ends, Ends::new(text), "{:?}", String::from_utf8_lossy(body));
                }
            }
        }
    }
}
