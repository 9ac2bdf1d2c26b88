//! A JSON text scanner that allocates nothing: validation with serde_json's
//! rules and nesting limit, skipping, member and item positions, and string
//! unescaping into a caller's buffer.
//!
//! Large `tools/call` arguments are read with this instead of being parsed
//! into a `serde_json::Value` tree (where every number is a heap string):
//! [`validate`] checks a span once, and the walkers below then treat it as
//! known-good text, addressed by byte offsets. The walkers never panic on
//! text that did not validate; they just return meaningless positions.
//!
//! Architecture Invariant: pure; no I/O.

use std::fmt;

/// Why a text is not acceptable JSON. Only the kind matters to callers:
/// the JSON-RPC layer answers both with a fixed message, as it does for
/// serde_json's errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanError {
    /// Not JSON (serde_json would reject it with a syntax error).
    Syntax,
    /// Containers nested as deep as serde_json's recursion limit.
    TooDeep,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::Syntax => f.write_str("invalid JSON"),
            ScanError::TooDeep => f.write_str("invalid JSON: nested too deep"),
        }
    }
}

impl std::error::Error for ScanError {}

/// serde_json's recursion limit: a container at this level (counting from
/// 1 at the outermost) is refused.
pub const SERDE_DEPTH_LIMIT: usize = 128;

/// The first non-whitespace position at or after `pos`.
pub fn skip_ws(text: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = text.get(pos) {
        pos += 1;
    }
    pos
}

/// Checks that `text` is exactly one JSON value (surrounding whitespace
/// allowed) as serde_json would parse it into a `Value`, when `outer`
/// containers already enclose it: strings must hold valid escapes with
/// paired surrogates and no control characters, numbers follow the JSON
/// grammar, and no container sits at level [`SERDE_DEPTH_LIMIT`]. The error
/// is the first problem from the left, as serde_json reports it.
pub fn validate(text: &[u8], outer: usize) -> Result<(), ScanError> {
    let mut v = Validator {
        text,
        pos: 0,
        depth: outer,
    };
    v.value()?;
    if skip_ws(text, v.pos) != text.len() {
        return Err(ScanError::Syntax);
    }
    Ok(())
}

/// [`validate`] driven by its caller, who looks into the objects it cares
/// about member by member and has every other value checked whole: the
/// verdict is the one [`validate`] gives (the first problem from the left,
/// the same nesting limit), and the caller learns where things are in the
/// same reading. Positions are byte offsets into the text.
pub struct Walker<'a>(Validator<'a>);

impl<'a> Walker<'a> {
    /// A walk of `text` from its start, at the outermost level.
    pub fn new(text: &'a [u8]) -> Walker<'a> {
        Walker(Validator {
            text,
            pos: 0,
            depth: 0,
        })
    }

    /// The next byte that is not whitespace (the walk moves onto it).
    pub fn peek(&mut self) -> Option<u8> {
        self.0.peek()
    }

    /// Where the walk is.
    pub fn pos(&self) -> usize {
        self.0.pos
    }

    /// Checks one value and moves past it (to its last byte's successor).
    pub fn value(&mut self) -> Result<(), ScanError> {
        self.0.value()
    }

    /// Opens the object whose `{` [`Walker::peek`] just gave: false when
    /// it is empty (and then already closed).
    pub fn enter_object(&mut self) -> Result<bool, ScanError> {
        self.0.enter(b'}')
    }

    /// A member's key and its colon: the key's position, the position
    /// after it, and whether it holds no escape.
    pub fn key(&mut self) -> Result<(usize, usize, bool), ScanError> {
        self.0.key()
    }

    /// After a member's value: true past a comma (another member
    /// follows), false past the object's `}`.
    pub fn next_member(&mut self) -> Result<bool, ScanError> {
        self.0.next(b'}')
    }

    /// Checks that only whitespace is left.
    pub fn finish(&mut self) -> Result<(), ScanError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(ScanError::Syntax),
        }
    }
}

struct Validator<'a> {
    text: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Validator<'_> {
    fn peek(&mut self) -> Option<u8> {
        self.pos = skip_ws(self.text, self.pos);
        self.text.get(self.pos).copied()
    }

    fn value(&mut self) -> Result<(), ScanError> {
        // Containers are walked with an explicit count of open levels: the
        // nesting limit bounds it, so recursion depth is bounded too.
        match self.peek() {
            Some(b'n') => self.literal(b"null"),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'"') => {
                self.pos = string_end(self.text, self.pos).ok_or(ScanError::Syntax)?;
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => {
                self.pos = number_end(self.text, self.pos).ok_or(ScanError::Syntax)?;
                Ok(())
            }
            Some(b'{') => {
                if !self.enter(b'}')? {
                    return Ok(());
                }
                loop {
                    self.key()?;
                    self.value()?;
                    if !self.next(b'}')? {
                        return Ok(());
                    }
                }
            }
            Some(b'[') => {
                if !self.enter(b']')? {
                    return Ok(());
                }
                loop {
                    self.value()?;
                    if !self.next(b']')? {
                        return Ok(());
                    }
                }
            }
            _ => Err(ScanError::Syntax),
        }
    }

    /// Opens the container at `pos` (closed by `close`): one level deeper,
    /// refused at the nesting limit. False when it is empty (then already
    /// closed).
    fn enter(&mut self, close: u8) -> Result<bool, ScanError> {
        self.depth += 1;
        if self.depth >= SERDE_DEPTH_LIMIT {
            return Err(ScanError::TooDeep);
        }
        self.pos += 1;
        if self.peek() == Some(close) {
            self.pos += 1;
            self.depth -= 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// A member's key and its colon: the key's position, the position after
    /// it, and whether it holds no escape.
    fn key(&mut self) -> Result<(usize, usize, bool), ScanError> {
        if self.peek() != Some(b'"') {
            return Err(ScanError::Syntax);
        }
        let key = self.pos;
        let (end, plain) = string_scan(self.text, key).ok_or(ScanError::Syntax)?;
        self.pos = end;
        if self.peek() != Some(b':') {
            return Err(ScanError::Syntax);
        }
        self.pos += 1;
        Ok((key, end, plain))
    }

    /// After an item or member: true past a comma (another follows), false
    /// past the container's `close`.
    fn next(&mut self, close: u8) -> Result<bool, ScanError> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                self.depth -= 1;
                Ok(false)
            }
            _ => Err(ScanError::Syntax),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), ScanError> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(ScanError::Syntax)
        }
    }
}

fn hex4(text: &[u8], pos: usize) -> Option<u16> {
    let digits = text.get(pos..pos + 4)?;
    let mut n = 0u16;
    for &d in digits {
        let v = (d as char).to_digit(16)?;
        n = n * 16 + v as u16;
    }
    Some(n)
}

/// The position after the string literal starting at `pos` (its opening
/// quote), if it is valid.
pub fn string_end(text: &[u8], pos: usize) -> Option<usize> {
    string_scan(text, pos).map(|(end, _)| end)
}

/// [`string_end`], and whether the literal holds no escape (its contents
/// are then its decoded bytes).
fn string_scan(text: &[u8], pos: usize) -> Option<(usize, bool)> {
    let mut i = pos + 1;
    let mut plain = true;
    loop {
        i = string_run(text, i);
        match *text.get(i)? {
            b'"' => return Some((i + 1, plain)),
            b'\\' => {
                plain = false;
                i = escape_end(text, i)?.0;
            }
            0x00..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// Eight bytes as one word, for the tests below.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether a byte of `word` is `b`.
fn has_byte(word: u64, b: u8) -> bool {
    let x = word ^ (ONES * u64::from(b));
    x.wrapping_sub(ONES) & !x & HIGHS != 0
}

/// Whether a byte of `word` is below `n` (at most 128).
fn has_below(word: u64, n: u8) -> bool {
    word.wrapping_sub(ONES * u64::from(n)) & !word & HIGHS != 0
}

/// The eight bytes at `i` as a word.
fn word_at(text: &[u8], i: usize) -> u64 {
    let mut chunk = [0u8; 8];
    chunk.copy_from_slice(&text[i..i + 8]);
    u64::from_le_bytes(chunk)
}

/// The first position at or after `i` inside a string literal that holds
/// a quote, a backslash or a control character (`text.len()` if none):
/// the bytes a string walk must look at. Eight bytes are tested at a time.
fn string_run(text: &[u8], mut i: usize) -> usize {
    while i + 8 <= text.len() {
        let word = word_at(text, i);
        if has_byte(word, b'"') || has_byte(word, b'\\') || has_below(word, 0x20) {
            break;
        }
        i += 8;
    }
    while i < text.len() && !matches!(text[i], b'"' | b'\\' | 0x00..=0x1f) {
        i += 1;
    }
    i
}

/// The position of the first `byte` in `text`, eight bytes tested at a
/// time.
pub fn find_byte(text: &[u8], byte: u8) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= text.len() && !has_byte(word_at(text, i), byte) {
        i += 8;
    }
    text[i..].iter().position(|&b| b == byte).map(|at| i + at)
}

/// Decodes the escape at `pos` (its backslash): the position after it and
/// the code point it stands for (a surrogate pair counts as one).
fn escape_end(text: &[u8], pos: usize) -> Option<(usize, u32)> {
    let c = match *text.get(pos + 1)? {
        b'"' => '"' as u32,
        b'\\' => '\\' as u32,
        b'/' => '/' as u32,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => '\n' as u32,
        b'r' => '\r' as u32,
        b't' => '\t' as u32,
        b'u' => {
            let n = hex4(text, pos + 2)?;
            match n {
                0xDC00..=0xDFFF => return None,
                0xD800..=0xDBFF => {
                    if text.get(pos + 6..pos + 8)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(text, pos + 8)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    let c = 0x1_0000 + ((u32::from(n) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    return Some((pos + 12, c));
                }
                _ => return Some((pos + 6, u32::from(n))),
            }
        }
        _ => return None,
    };
    Some((pos + 2, c))
}

/// The position after the number literal starting at `pos`, if it follows
/// the JSON grammar.
pub fn number_end(text: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos;
    let digits = |i: &mut usize| {
        let start = *i;
        while text.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if text.get(i) == Some(&b'-') {
        i += 1;
    }
    match text.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return None,
    }
    if text.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return None;
        }
    }
    if let Some(b'e' | b'E') = text.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = text.get(i) {
            i += 1;
        }
        if !digits(&mut i) {
            return None;
        }
    }
    Some(i)
}

/// The first position at or after `i` (and before `limit`, else `limit`)
/// holding a quote or a bracket: the bytes a container walk looks at. Eight
/// bytes are tested at a time, so long runs of numbers pass quickly.
fn next_special(text: &[u8], mut i: usize, limit: usize) -> usize {
    let limit = limit.min(text.len());
    let has = has_byte;
    while i + 8 <= limit {
        let word = word_at(text, i);
        if has(word, b'"')
            || has(word, b'[')
            || has(word, b']')
            || has(word, b'{')
            || has(word, b'}')
        {
            break;
        }
        i += 8;
    }
    while i < limit && !matches!(text[i], b'"' | b'[' | b']' | b'{' | b'}') {
        i += 1;
    }
    i
}

/// The position after the (valid) value starting at `pos` (whitespace
/// before it is skipped).
pub fn value_end(text: &[u8], pos: usize) -> usize {
    let pos = skip_ws(text, pos);
    match text.get(pos) {
        Some(b'"') => string_end(text, pos).unwrap_or(text.len()),
        Some(b'-' | b'0'..=b'9') => number_end(text, pos).unwrap_or(text.len()),
        Some(b'n' | b't') => pos + 4,
        Some(b'f') => pos + 5,
        Some(b'[' | b'{') => {
            // Strings are skipped whole, so brackets inside them do not count.
            let mut depth = 0usize;
            let mut i = pos;
            loop {
                i = next_special(text, i, text.len());
                let Some(&b) = text.get(i) else {
                    break;
                };
                match b {
                    b'"' => {
                        i = string_end(text, i).unwrap_or(text.len());
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            text.len()
        }
        _ => text.len(),
    }
}

/// Where every container of a (valid) text ends, found in one pass: with
/// it, skipping a nested array or object is a lookup instead of a re-read,
/// so walking a deeply nested value costs its size, not its size times its
/// depth. One entry (8 bytes) per array or object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ends {
    /// `(position of the opening bracket, position after the closing one)`,
    /// by position.
    spans: Vec<(u32, u32)>,
}

impl Ends {
    /// Finds the ends in `text` (which must be valid JSON). Texts of 4 GiB
    /// or more get an empty table (skips then re-read).
    pub fn new(text: &[u8]) -> Ends {
        let mut spans = Vec::new();
        if u32::try_from(text.len()).is_err() {
            return Ends { spans };
        }
        let mut open: Vec<usize> = Vec::new();
        let mut i = 0;
        loop {
            i = next_special(text, i, text.len());
            let Some(&b) = text.get(i) else {
                break;
            };
            match b {
                b'"' => {
                    i = string_end(text, i).unwrap_or(text.len());
                    continue;
                }
                b'[' | b'{' => {
                    open.push(spans.len());
                    spans.push((i as u32, 0));
                }
                b']' | b'}' => {
                    if let Some(at) = open.pop() {
                        spans[at].1 = (i + 1) as u32;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Ends { spans }
    }

    /// A table from `(open, after close)` pairs in order of the openings.
    pub(crate) fn from_spans(spans: Vec<(u32, u32)>) -> Ends {
        Ends { spans }
    }

    /// [`Ends::new`] in steps: an [`EndsBuilder`] that scans `text`.
    pub fn builder(text: &[u8]) -> EndsBuilder {
        EndsBuilder {
            spans: Vec::new(),
            open: Vec::new(),
            at: 0,
            whole: u32::try_from(text.len()).is_ok(),
        }
    }

    /// The position after the container opening at `pos`.
    fn end_of(&self, pos: usize) -> Option<usize> {
        let pos = u32::try_from(pos).ok()?;
        let i = self.spans.binary_search_by_key(&pos, |s| s.0).ok()?;
        Some(self.spans[i].1 as usize).filter(|end| *end > 0)
    }
}

/// [`Ends::new`] resumable: each [`EndsBuilder::step`] reads a bounded
/// stretch of the text, and the table comes out the same.
#[derive(Clone, Debug, Default)]
pub struct EndsBuilder {
    spans: Vec<(u32, u32)>,
    open: Vec<usize>,
    at: usize,
    whole: bool,
}

impl EndsBuilder {
    /// Reads on from where the last step stopped, about `bytes` bytes (a
    /// string is read whole); true once the whole text is read. `text`
    /// must be the text the builder was made for.
    pub fn step(&mut self, text: &[u8], bytes: usize) -> bool {
        if !self.whole {
            return true;
        }
        let stop = self.at.saturating_add(bytes.max(1));
        let mut i = self.at;
        loop {
            i = next_special(text, i, stop);
            let Some(&b) = text.get(i) else {
                break;
            };
            if i >= stop {
                self.at = i;
                return false;
            }
            match b {
                b'"' => {
                    i = string_end(text, i).unwrap_or(text.len());
                    continue;
                }
                b'[' | b'{' => {
                    self.open.push(self.spans.len());
                    self.spans.push((i as u32, 0));
                }
                b']' | b'}' => {
                    if let Some(at) = self.open.pop() {
                        self.spans[at].1 = (i + 1) as u32;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.at = text.len();
        true
    }

    /// The table, once [`EndsBuilder::step`] returned true.
    pub fn finish(self) -> Ends {
        Ends { spans: self.spans }
    }
}

/// The position of the first item of the (valid) array at `pos`, if any:
/// [`Items`] one step at a time, for walks that stop and resume.
pub fn first_item(text: &[u8], pos: usize) -> Option<usize> {
    let first = skip_ws(text, pos + 1);
    (text.get(first).is_some_and(|b| *b != b']')).then_some(first)
}

/// The position of the item after the one at `item`, if any.
pub fn next_item(text: &[u8], item: usize, ends: Option<&Ends>) -> Option<usize> {
    let end = skip_ws(text, value_end_in(text, item, ends));
    (text.get(end) == Some(&b',')).then(|| skip_ws(text, end + 1))
}

/// [`value_end`], with containers looked up in `ends`.
pub fn value_end_in(text: &[u8], pos: usize, ends: Option<&Ends>) -> usize {
    let pos = skip_ws(text, pos);
    if let (Some(ends), Some(b'[' | b'{')) = (ends, text.get(pos)) {
        if let Some(end) = ends.end_of(pos) {
            return end;
        }
    }
    value_end(text, pos)
}

/// Walks the items of the (valid) array whose `[` is at `pos`.
pub struct Items<'a> {
    text: &'a [u8],
    pos: usize,
    done: bool,
    ends: Option<&'a Ends>,
}

/// The items of the array at `pos`: each item's start position.
pub fn items(text: &[u8], pos: usize) -> Items<'_> {
    items_in(text, pos, None)
}

/// [`items`], skipping containers with `ends`.
pub fn items_in<'a>(text: &'a [u8], pos: usize, ends: Option<&'a Ends>) -> Items<'a> {
    let first = skip_ws(text, pos + 1);
    Items {
        text,
        pos: first,
        done: text.get(first).is_none_or(|b| *b == b']'),
        ends,
    }
}

impl Iterator for Items<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let end = skip_ws(self.text, value_end_in(self.text, start, self.ends));
        match self.text.get(end) {
            Some(b',') => self.pos = skip_ws(self.text, end + 1),
            _ => self.done = true,
        }
        Some(start)
    }
}

/// The number of items of the (valid) array at `pos`.
pub fn count_items(text: &[u8], pos: usize) -> usize {
    items(text, pos).count()
}

/// Walks the members of the (valid) object whose `{` is at `pos`.
pub struct Members<'a> {
    text: &'a [u8],
    pos: usize,
    done: bool,
    ends: Option<&'a Ends>,
}

/// The members of the object at `pos`: each member's key (the string
/// literal's position) and value start position.
pub fn members(text: &[u8], pos: usize) -> Members<'_> {
    members_in(text, pos, None)
}

/// [`members`], skipping containers with `ends`.
pub fn members_in<'a>(text: &'a [u8], pos: usize, ends: Option<&'a Ends>) -> Members<'a> {
    let first = skip_ws(text, pos + 1);
    Members {
        text,
        pos: first,
        done: text.get(first) != Some(&b'"'),
        ends,
    }
}

impl Iterator for Members<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        if self.done {
            return None;
        }
        let key = self.pos;
        let key_end = string_end(self.text, key).unwrap_or(self.text.len());
        let colon = skip_ws(self.text, key_end);
        let value = skip_ws(self.text, colon + 1);
        let end = skip_ws(self.text, value_end_in(self.text, value, self.ends));
        match self.text.get(end) {
            Some(b',') => self.pos = skip_ws(self.text, end + 1),
            _ => self.done = true,
        }
        if self.text.get(key) != Some(&b'"') {
            self.done = true;
            return None;
        }
        Some((key, value))
    }
}

/// Calls `f` with each chunk of the decoded bytes of the (valid) string
/// literal at `pos`: runs of raw text, and escapes as UTF-8.
pub fn decode_str(text: &[u8], pos: usize, mut f: impl FnMut(&[u8])) {
    let mut i = pos + 1;
    let mut run = i;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => break,
            b'\\' => {
                f(&text[run..i]);
                let Some((next, c)) = escape_end(text, i) else {
                    return;
                };
                let mut buf = [0u8; 4];
                let ch = char::from_u32(c).unwrap_or('\u{fffd}');
                f(ch.encode_utf8(&mut buf).as_bytes());
                i = next;
                run = i;
            }
            _ => i += 1,
        }
    }
    f(&text[run..i.min(text.len())]);
}

/// The length in bytes of the decoded (valid) string literal at `pos`.
pub fn decoded_len(text: &[u8], pos: usize) -> usize {
    let mut n = 0;
    decode_str(text, pos, |chunk| n += chunk.len());
    n
}

/// The raw contents of the string literal at `pos` when it has no escapes
/// (so they are its decoded bytes).
pub fn plain_str(text: &[u8], pos: usize) -> Option<&[u8]> {
    // One pass: the contents run to the closing quote unless a backslash
    // comes first.
    let inner = text.get(pos + 1..)?;
    let end = inner.iter().position(|&b| b == b'"' || b == b'\\')?;
    (inner[end] == b'"').then_some(&inner[..end])
}

/// The decoded text of the (valid) string literal at `pos`. Allocates; for
/// keys with escapes and error messages.
pub fn decode_string(text: &[u8], pos: usize) -> String {
    let mut out = Vec::new();
    decode_str(text, pos, |chunk| out.extend_from_slice(chunk));
    String::from_utf8(out).unwrap_or_default()
}

/// Whether the (valid) string literal at `pos` decodes to `want`.
pub fn str_eq(text: &[u8], pos: usize, want: &str) -> bool {
    match plain_str(text, pos) {
        Some(raw) => raw == want.as_bytes(),
        None => decode_string(text, pos) == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_special_finds_what_a_byte_walk_finds() {
        let texts = [
            &b"123456789,123456789,123456789]"[..],
            b"[1,2,3,4,5,6,7,8,9,10,11,12]",
            b"\"abcdefghij\"{}",
            b"\x80\xff\x7f\x22\x5b\x5d\x7b\x7d\xa2\xdb\xdd\xfb\xfd0000",
            b"",
            b"}",
        ];
        for text in texts {
            for start in 0..=text.len() {
                for limit in start..=text.len() + 2 {
                    let naive = (start..limit.min(text.len()))
                        .find(|&i| matches!(text[i], b'"' | b'[' | b']' | b'{' | b'}'))
                        .unwrap_or(limit.min(text.len()));
                    assert_eq!(
                        next_special(text, start, limit),
                        naive,
                        "{text:?} {start} {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn word_searches_find_what_a_byte_walk_finds() {
        let texts = [
            &b"abcdefghijklmnop\"qrstuvwxyz"[..],
            b"0123456789abcdef0123\\x",
            b"\x7f\x80\xff\xe9\x1f\x20\x21\x00",
            b"\xa2\xdc\x9f\xa0\x60\x62\xa2\xa2\xa2\xa2\xa2\n",
            b"",
            b"\"",
            b"no special bytes here at all, none",
        ];
        for text in texts {
            for start in 0..=text.len() {
                let naive = (start..text.len())
                    .find(|&i| matches!(text[i], b'"' | b'\\' | 0x00..=0x1f))
                    .unwrap_or(text.len());
                assert_eq!(string_run(text, start), naive, "{text:?} {start}");
                for byte in [b'\n', b'"', 0x80, 0x00, b'z'] {
                    let naive = text[start..].iter().position(|&b| b == byte);
                    assert_eq!(find_byte(&text[start..], byte), naive, "{text:?} {byte}");
                }
            }
        }
    }

    /// What serde_json says about `text` as a whole message.
    fn serde_verdict(text: &str) -> Result<(), ScanError> {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                Err(ScanError::TooDeep)
            }
            Err(_) => Err(ScanError::Syntax),
        }
    }

    #[test]
    fn validation_agrees_with_serde_json() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let cases: Vec<String> = [
            "0",
            "-0",
            "1.5e3",
            "1E400",
            "-",
            "01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "[1,]",
            "[,1]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"\\ud83d\\ude00\"",
            "\"\\x\"",
            "\"a\tb\"",
            "\"\\/\"",
            "nul",
            "true false",
            " [ 1 , { \"k\" : [ ] } ] ",
            "[\"]\"]",
            "{\"a\":[}",
            "",
            "\"é\\u00e9\"",
            "tru",
            "[1 2]",
            "{\"a\":1 \"b\":2}",
            "-01",
            "2.e5",
            "[-]",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([deep(127), deep(128), format!("{}1", "[".repeat(130))])
        .collect();
        let objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        let cases = cases.into_iter().chain([
            objects(127),
            objects(128),
            format!("{}1", r#"{"a":"#.repeat(130)),
            r#"{"a":1,"b":{"c":[{}],"d":{}}, "e" : {"f":"\u00e9"}}"#.into(),
            r#"{"a":{"b":1,}}"#.into(),
            r#"{"a":{"b" 1}}"#.into(),
            r#"{"a":{1:1}}"#.into(),
            r#"{"a":{}} {}"#.into(),
            r#"{"a\u0062":{"\q":1}}"#.into(),
        ]);
        for text in cases {
            assert_eq!(
                validate(text.as_bytes(), 0),
                serde_verdict(&text),
                "for {text:?}"
            );
            assert_eq!(
                walked(text.as_bytes()),
                serde_verdict(&text),
                "walked {text:?}"
            );
        }
    }

    /// [`validate`] through a [`Walker`] that enters every object.
    fn walked(text: &[u8]) -> Result<(), ScanError> {
        fn walk_all(w: &mut Walker) -> Result<(), ScanError> {
            if w.peek() != Some(b'{') {
                return w.value();
            }
            if !w.enter_object()? {
                return Ok(());
            }
            loop {
                let (key, end, plain) = w.key()?;
                assert_eq!(plain, plain_str(w.0.text, key).is_some());
                assert_eq!(Some(end), string_end(w.0.text, key));
                walk_all(w)?;
                if !w.next_member()? {
                    return Ok(());
                }
            }
        }
        let mut w = Walker::new(text);
        walk_all(&mut w)?;
        w.finish()
    }

    #[test]
    fn walkers_find_items_members_and_strings() {
        let text = br#" [1, "a,]" , {"k\"y": [2, 3], "z": null}, [] ] "#;
        let pos = skip_ws(text, 0);
        let items: Vec<usize> = items(text, pos).collect();
        assert_eq!(items.len(), 4);
        assert_eq!(&text[items[1]..value_end(text, items[1])], br#""a,]""#);
        let object = items[2];
        let members: Vec<(usize, usize)> = members(text, object).collect();
        assert_eq!(members.len(), 2);
        assert!(str_eq(text, members[0].0, "k\"y"));
        assert_eq!(count_items(text, members[0].1), 2);
        assert_eq!(count_items(text, items[3]), 0);
        assert_eq!(decoded_len(text, members[0].0), 3);
        let s = br#""a\u00e9\ud83d\ude00\n""#;
        assert_eq!(decode_string(s, 0), "a\u{e9}\u{1f600}\n");
        assert_eq!(decoded_len(s, 0), "a\u{e9}\u{1f600}\n".len());
        assert_eq!(plain_str(s, 0), None);
        assert_eq!(plain_str(br#""abc""#, 0), Some(&b"abc"[..]));
        // With the table of ends, the same walk.
        let ends = Ends::new(text);
        let with: Vec<usize> = items_in(text, pos, Some(&ends)).collect();
        assert_eq!(with, items);
        for &item in &items {
            assert_eq!(value_end_in(text, item, Some(&ends)), value_end(text, item));
        }
        let with: Vec<(usize, usize)> = members_in(text, object, Some(&ends)).collect();
        assert_eq!(with, members);
    }
}
