//! A JSON value's text held for reading in pages: its shape (kind, element
//! count, size), a readable preview cut at a value boundary, and pages.
//!
//! [`Paged`] takes the text by value (it is moved in, never copied) and
//! builds, in one scan, a sparse index: every [`STRIDE`] units, where that
//! unit starts in the text. A unit is an element of a top-level array, a
//! character of a top-level string (after JSON unescaping), or a character of
//! the text for any other value. A page scans from the nearest mark, so
//! reading one costs at most `STRIDE` units plus the page, never the whole
//! value.
//!
//! Pages: of an array, a JSON array of those elements (valid JSON); of a
//! string, the characters themselves (unescaped, so the pages joined are the
//! string); of anything else, the characters of its JSON text (the pages
//! joined are the text).
//!
//! The text is expected to be valid JSON (a tool result the server wrote);
//! anything else is paged as characters and never panics.
//!
//! Architecture Invariant: pure; no I/O.

use std::ops::Range;

/// Units between two marks of the index.
pub const STRIDE: usize = 1024;

/// What kind of JSON value the text holds, as pages treat it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A top-level array: pages are element ranges.
    List,
    /// A top-level string: pages are character ranges of the string.
    Str,
    /// A top-level object: pages are character ranges of the text.
    Record,
    /// A number, boolean, null or unreadable text: character ranges.
    Other,
}

impl Kind {
    /// The name shown to clients.
    pub fn name(self) -> &'static str {
        match self {
            Kind::List => "list",
            Kind::Str => "string",
            Kind::Record => "record",
            Kind::Other => "value",
        }
    }

    /// What a unit of this kind is called, plural.
    pub fn units(self) -> &'static str {
        match self {
            Kind::List => "elements",
            Kind::Str => "characters",
            Kind::Record | Kind::Other => "characters of JSON text",
        }
    }
}

/// Where a page lies in its value's text: the page is `open`, the text's
/// bytes `range` (as they are, or, `decoded`, the characters a string's
/// escapes there stand for: [`Paged::decode`]), then `close`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub open: &'static str,
    pub range: Range<usize>,
    pub close: &'static str,
    pub decoded: bool,
}

/// How a span of a value's text is written where a message holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// As it is (JSON text where a value goes).
    Raw,
    /// As the body of a JSON string holding it.
    Escaped,
    /// The characters a JSON string's body there stands for (a string's
    /// page: [`Paged::decode`]), as the body of a JSON string holding them.
    Decoded,
}

/// A value's JSON text with its index.
#[derive(Debug, PartialEq)]
pub struct Paged {
    text: String,
    kind: Kind,
    /// Units in all (elements, or characters).
    count: usize,
    /// `marks[k]`: the byte where unit `k * STRIDE` starts.
    marks: Vec<usize>,
}

impl Paged {
    /// Takes `text` (moved) and indexes it in one scan.
    pub fn new(text: String) -> Paged {
        let first = text.bytes().position(|b| !b.is_ascii_whitespace());
        let kind = match first.map(|i| text.as_bytes()[i]) {
            Some(b'[') => Kind::List,
            Some(b'"') => Kind::Str,
            Some(b'{') => Kind::Record,
            _ => Kind::Other,
        };
        let mut paged = Paged {
            text,
            kind,
            count: 0,
            marks: Vec::new(),
        };
        let start = first.unwrap_or(0);
        let (count, marks) = match kind {
            Kind::List => index_elements(paged.text.as_bytes(), start),
            Kind::Str => index_string(&paged.text, start + 1),
            Kind::Record | Kind::Other => index_chars(&paged.text, 0),
        };
        paged.count = count;
        paged.marks = marks;
        paged
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Elements of a list, characters of a string, characters of the text
    /// otherwise.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The size of the JSON text in bytes.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// The whole JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Units `offset .. offset + limit` (clamped to the value): see the
    /// module documentation for what a page of each kind is.
    pub fn page(&self, offset: usize, limit: usize) -> String {
        let span = self.span(offset, limit);
        let mut out = String::with_capacity(span.range.len() + 2);
        out.push_str(span.open);
        match span.decoded {
            true => {
                self.decode(span.range.start, span.range.end, usize::MAX, &mut out);
            }
            false => out.push_str(&self.text[span.range.clone()]),
        }
        out.push_str(span.close);
        out
    }

    /// Where the page [`Paged::page`] gives lies in the text, so it can be
    /// written from the text itself, a slice at a time, never copied whole.
    pub fn span(&self, offset: usize, limit: usize) -> Span {
        let end = offset.saturating_add(limit).min(self.count);
        let offset = offset.min(end);
        let bare = |range| Span {
            open: "",
            range,
            close: "",
            decoded: false,
        };
        match self.kind {
            Kind::List => Span {
                open: "[",
                range: self.list_range(offset, end),
                close: "]",
                decoded: false,
            },
            Kind::Str => Span {
                decoded: true,
                ..bare(self.string_range(offset, end))
            },
            Kind::Record | Kind::Other => bare(self.char_range(offset, end)),
        }
    }

    /// Appends the characters a JSON string's body stands for, from byte
    /// `from` (the start of a character) to byte `to` or the closing quote,
    /// stopping after the character that reaches `budget` bytes of the
    /// text; returns the byte where it stopped (the next character's).
    pub fn decode(&self, from: usize, to: usize, budget: usize, out: &mut String) -> usize {
        let mut pos = from;
        let stop = from.saturating_add(budget).min(to);
        while pos < stop {
            match decode_char(&self.text, pos) {
                Some((c, next)) => {
                    out.push(c);
                    pos = next;
                }
                None => return to,
            }
        }
        pos
    }

    /// The byte where unit `target` starts, scanning from its mark with
    /// `step` (which moves from one unit's start to the next one's).
    fn seek(&self, target: usize, step: &dyn Fn(usize) -> usize) -> usize {
        let mark = (target / STRIDE).min(self.marks.len().saturating_sub(1));
        let Some(&at) = self.marks.get(mark) else {
            return self.text.len();
        };
        let mut pos = at;
        for _ in mark * STRIDE..target {
            pos = step(pos);
        }
        pos
    }

    /// The text of elements `offset..end`, without surrounding blanks:
    /// from where element `offset` starts to where element `end` does (or
    /// the closing bracket), less the comma between. Both ends are found
    /// from their marks, so a page of any size costs two short scans.
    fn list_range(&self, offset: usize, end: usize) -> Range<usize> {
        if offset >= end {
            return 0..0;
        }
        let bytes = self.text.as_bytes();
        let step = |pos: usize| next_element(bytes, pos).1;
        let from = self.seek(offset, &step);
        let to = self.seek(end, &step).max(from);
        let text = self.text[from..to].trim_end();
        let text = text.strip_suffix(',').unwrap_or(text).trim_end();
        let start = from + (text.len() - text.trim_start().len());
        start..from + text.len()
    }

    /// The body text of characters `offset..end` of a string.
    fn string_range(&self, offset: usize, end: usize) -> Range<usize> {
        let step = |pos: usize| decode_char(&self.text, pos).map_or(self.text.len(), |(_, n)| n);
        let from = self.seek(offset, &step);
        from..self.seek(end, &step).max(from)
    }

    fn char_range(&self, offset: usize, end: usize) -> Range<usize> {
        let step = |pos: usize| match self.text.get(pos..).and_then(|t| t.chars().next()) {
            Some(c) => pos + c.len_utf8(),
            None => self.text.len(),
        };
        let from = self.seek(offset, &step).min(self.text.len());
        from..self.seek(end, &step).clamp(from, self.text.len())
    }

    /// Whether bytes `range` of a string's body are already what escaping
    /// the characters they stand for gives (`json::write_str_body`: the
    /// escapes `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00xx` for
    /// other control characters, nothing else escaped): then they can be
    /// written as they are. Text this server wrote always is.
    pub fn canonical(&self, range: Range<usize>) -> bool {
        let body = &self.text.as_bytes()[range];
        let mut i = 0;
        while i < body.len() {
            match body[i] {
                b'\\' => {
                    let short = matches!(
                        body.get(i + 1),
                        Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't')
                    );
                    if short {
                        i += 2;
                        continue;
                    }
                    let hex = body.get(i + 1..i + 6);
                    let control = match hex {
                        Some([b'u', b'0', b'0', high @ (b'0' | b'1'), low]) => {
                            let low = match low {
                                b'0'..=b'9' => low - b'0',
                                b'a'..=b'f' => low - b'a' + 10,
                                _ => return false,
                            };
                            Some((high - b'0') << 4 | low)
                        }
                        _ => None,
                    };
                    match control {
                        Some(0x08 | 0x09 | 0x0a | 0x0c | 0x0d) | None => return false,
                        Some(_) => i += 6,
                    }
                }
                0x00..=0x1f => return false,
                _ => i += 1,
            }
        }
        true
    }

    /// The beginning of the value in at most `budget` bytes, cut at a value
    /// boundary and closed so it is still valid JSON (a string is cut between
    /// characters and closed with its quote), with the number of units it
    /// shows (elements of a list, characters of a string, else 0). `None`
    /// when the whole text fits.
    pub fn preview(&self, budget: usize) -> Option<(String, usize)> {
        if self.text.len() <= budget {
            return None;
        }
        Some(match self.kind {
            Kind::Str => {
                let start = self.text.len() - self.text.trim_start().len();
                let mut pos = start + 1;
                let mut shown = 0;
                while let Some((_, next)) = decode_char(&self.text, pos) {
                    if next + 1 > budget {
                        break;
                    }
                    pos = next;
                    shown += 1;
                }
                let mut out = self.text[start..pos].to_string();
                out.push('"');
                (out, shown)
            }
            Kind::List | Kind::Record => cut_container(self.text.as_bytes(), budget, self.kind),
            Kind::Other => (String::new(), 0),
        })
    }
}

/// One step over an array's element: from where element text starts (after
/// `[` or `,`), the byte where its value ends and the byte where the next
/// element starts (past the `,`), or the closing `]` for both at the end.
fn next_element(bytes: &[u8], start: usize) -> (usize, usize) {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let mut i = start;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' if depth == 0 => return (i, i),
                b']' | b'}' => depth -= 1,
                b',' if depth == 0 => return (i, i + 1),
                _ => {}
            }
        }
        i += 1;
    }
    (bytes.len(), bytes.len())
}

/// Counts a top-level array's elements (its `[` at `open`) and marks where
/// every `STRIDE`-th one starts.
fn index_elements(bytes: &[u8], open: usize) -> (usize, Vec<usize>) {
    let first = open + 1;
    let empty = bytes[first.min(bytes.len())..]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_none_or(|&b| b == b']');
    if empty {
        return (0, vec![first]);
    }
    let mut marks = vec![first];
    let mut count = 0;
    let mut pos = first;
    loop {
        count += 1;
        let (_, next) = next_element(bytes, pos);
        if next >= bytes.len() || bytes[next] == b']' || next == pos {
            return (count, marks);
        }
        pos = next;
        if count % STRIDE == 0 {
            marks.push(pos);
        }
    }
}

/// The character at byte `pos` of a JSON string's body, unescaped, and the
/// byte after it; `None` at the closing quote (or the end of the text).
fn decode_char(text: &str, pos: usize) -> Option<(char, usize)> {
    let bytes = text.as_bytes();
    match bytes.get(pos)? {
        b'"' => None,
        b'\\' => {
            let c = *bytes.get(pos + 1)?;
            let simple = match c {
                b'"' => Some('"'),
                b'\\' => Some('\\'),
                b'/' => Some('/'),
                b'b' => Some('\u{8}'),
                b'f' => Some('\u{c}'),
                b'n' => Some('\n'),
                b'r' => Some('\r'),
                b't' => Some('\t'),
                _ => None,
            };
            if let Some(s) = simple {
                return Some((s, pos + 2));
            }
            if c != b'u' {
                // Not an escape JSON has: one replacement character for the
                // backslash and the whole character after it (which may be
                // several bytes: stepping one byte would land inside it).
                let after = text.get(pos + 1..)?.chars().next()?;
                return Some(('\u{fffd}', pos + 1 + after.len_utf8()));
            }
            let hex = |at: usize| {
                text.get(at..at + 4)
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
            };
            let Some(high) = hex(pos + 2) else {
                return Some(('\u{fffd}', (pos + 2).min(bytes.len())));
            };
            if (0xd800..0xdc00).contains(&high) && text.get(pos + 6..pos + 8) == Some("\\u") {
                if let Some(low) = hex(pos + 8).filter(|l| (0xdc00..0xe000).contains(l)) {
                    let c = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
                    return Some((char::from_u32(c).unwrap_or('\u{fffd}'), pos + 12));
                }
            }
            Some((char::from_u32(high).unwrap_or('\u{fffd}'), pos + 6))
        }
        _ => {
            let c = text.get(pos..)?.chars().next()?;
            Some((c, pos + c.len_utf8()))
        }
    }
}

/// Counts a top-level string's characters (its body from byte `body`) and
/// marks every `STRIDE`-th one.
fn index_string(text: &str, body: usize) -> (usize, Vec<usize>) {
    let mut marks = vec![body];
    let mut count = 0;
    let mut pos = body;
    while let Some((_, next)) = decode_char(text, pos) {
        count += 1;
        pos = next;
        if count % STRIDE == 0 {
            marks.push(pos);
        }
    }
    (count, marks)
}

/// Counts the characters of `text` from byte `from` and marks every
/// `STRIDE`-th one.
fn index_chars(text: &str, from: usize) -> (usize, Vec<usize>) {
    let mut marks = vec![from];
    let mut count = 0;
    for (i, _) in text[from..].char_indices() {
        if count > 0 && count % STRIDE == 0 {
            marks.push(from + i);
        }
        count += 1;
    }
    (count, marks)
}

/// The longest beginning of an array or object within `budget` bytes that
/// ends at a value boundary (or between two characters of a string value,
/// which is then closed), closed with its brackets; and how many top-level
/// elements it keeps whole (for a list).
fn cut_container(bytes: &[u8], budget: usize, kind: Kind) -> (String, usize) {
    // Open containers: the closing byte, and for an object whether its
    // next string is a key.
    let mut stack: Vec<(u8, bool)> = Vec::new();
    // Inside a string: whether it is a value (a cut may fall inside it).
    let mut in_str: Option<bool> = None;
    // Bytes of an escape still to come (1 after `\`, 4 after `\u`).
    let mut escape_left = 0u8;
    // The best cut so far: its end, what closes it, its whole top-level
    // elements.
    let mut best: (usize, String, usize) = (0, String::new(), 0);
    let mut top_elements = 0usize;
    let closing = |stack: &[(u8, bool)], quote: bool| {
        let mut out = String::new();
        if quote {
            out.push('"');
        }
        out.extend(stack.iter().rev().map(|&(c, _)| c as char));
        out
    };
    for (i, &c) in bytes.iter().enumerate() {
        if i > budget {
            break;
        }
        if let Some(is_value) = in_str {
            if escape_left > 0 {
                escape_left -= 1;
                if escape_left == 0 && c == b'u' && i > 0 && bytes[i - 1] == b'\\' {
                    escape_left = 4;
                }
                continue;
            }
            let boundary = c & 0xc0 != 0x80;
            if is_value && boundary && i + 1 + stack.len() <= budget {
                best = (i, closing(&stack, true), top_elements);
            }
            if c == b'\\' {
                escape_left = 1;
            } else if c == b'"' {
                in_str = None;
            }
            continue;
        }
        match c {
            b'"' => {
                let key = stack.last().is_some_and(|&(c, key)| c == b'}' && key);
                in_str = Some(!key);
            }
            b'[' | b'{' => {
                stack.push((if c == b'[' { b']' } else { b'}' }, true));
                if i + 1 + stack.len() <= budget {
                    best = (i + 1, closing(&stack, false), top_elements);
                }
            }
            b']' | b'}' => {
                stack.pop();
            }
            b':' => {
                if let Some(top) = stack.last_mut() {
                    top.1 = false;
                }
            }
            b',' => {
                if stack.len() == 1 {
                    top_elements += 1;
                }
                if i + stack.len() <= budget {
                    best = (i, closing(&stack, false), top_elements);
                }
                if let Some(top) = stack.last_mut() {
                    top.1 = true;
                }
            }
            _ => {}
        }
    }
    let (end, closers, elements) = best;
    let mut out = String::from_utf8_lossy(&bytes[..end]).into_owned();
    out.push_str(&closers);
    let shown = if kind == Kind::List { elements } else { 0 };
    (out, shown)
}

#[cfg(test)]
mod tests;
