//! The one logger: every line the server writes on stderr goes through here,
//! filtered by `--log-level` and shaped by `--log-format` (the records and
//! formats are `protocol::log`). Each line is one `write` to stderr, or,
//! while the reactor runs, the lines since the last answer are one `write`.
//!
//! The settings are process-wide, set once before serving: diagnostics come
//! from every part of the edge, and stderr itself is process-wide. Also the
//! ids of new traces and spans (a generator seeded once from the system's
//! random source; ids need to be unique, not secret).

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::protocol::log::{self, Format, Level, Record, Value};

static LEVEL: AtomicU8 = AtomicU8::new(Level::Warn as u8);
static JSON: AtomicU8 = AtomicU8::new(0);

/// Sets the threshold and the format.
pub fn configure(level: Level, format: Format) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    JSON.store(u8::from(format == Format::Json), Ordering::Relaxed);
}

/// Whether records at `level` are written.
pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

pub fn format() -> Format {
    if JSON.load(Ordering::Relaxed) == 1 {
        Format::Json
    } else {
        Format::Text
    }
}

/// Writes `record` if its level is on: at once, or at the next [`flush`]
/// while lines are batched.
pub fn emit(record: &Record<'_>) {
    if !enabled(record.level) {
        return;
    }
    let (format, micros) = (format(), now_micros());
    let batched = BATCH.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else {
            return false;
        };
        let Some(buf) = b.as_mut() else {
            return false;
        };
        log::render_into(buf, format, record, micros);
        if buf.len() >= BATCH_MAX {
            write_out(buf);
        }
        true
    });
    if !batched {
        let line = log::render(format, record, micros);
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// Most bytes batched before they are written anyway.
const BATCH_MAX: usize = 64 * 1024;

thread_local! {
    /// Lines held until the end of the reactor's turn (`Some` while batching).
    static BATCH: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn write_out(buf: &mut String) {
    if !buf.is_empty() {
        let _ = std::io::stderr().lock().write_all(buf.as_bytes());
        buf.clear();
    }
}

/// Holds lines until [`flush`] (`true`), or writes each at once (`false`,
/// after writing what is held). The reactor batches: it flushes before it
/// writes an answer and at the end of each turn, so a call's span and
/// access lines cost one `write`, not two, and are out before its answer.
pub fn batch(on: bool) {
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        if let Some(buf) = b.as_mut() {
            write_out(buf);
        }
        *b = on.then(String::new);
    });
}

/// Writes the lines held.
pub fn flush() {
    BATCH.with(|b| {
        if let Some(buf) = b.borrow_mut().as_mut() {
            write_out(buf);
        }
    });
}

/// A diagnostic with fields.
pub fn with(level: Level, msg: &str, fields: &[(&str, Value<'_>)]) {
    emit(&Record {
        level,
        msg,
        fields,
        prefixed: true,
    });
}

pub fn error(msg: &str) {
    with(Level::Error, msg, &[]);
}

pub fn warn(msg: &str) {
    with(Level::Warn, msg, &[]);
}

pub fn info(msg: &str) {
    with(Level::Info, msg, &[]);
}

pub fn debug(msg: &str) {
    with(Level::Debug, msg, &[]);
}

/// A line that carries its own label (a tool exclusion note, the start-up
/// banner), printed in text as it is.
pub fn labelled(level: Level, line: &str) {
    emit(&Record {
        level,
        msg: line,
        fields: &[],
        prefixed: false,
    });
}

/// Microseconds since the Unix epoch.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

thread_local! {
    static STATE: Cell<u64> = const { Cell::new(0) };
}

/// The next 64 random bits (splitmix64, seeded from the system's random
/// source on first use, or from the clock and pid without one).
fn next_u64() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            let mut seed = [0u8; 8];
            x = match crate::edge::proc::fill_random(&mut seed) {
                Ok(()) => u64::from_le_bytes(seed),
                Err(_) => now_micros() ^ (u64::from(std::process::id()) << 32),
            } | 1;
        }
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        s.set(x);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// A new random id of `N` bytes.
pub fn random_id<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    for chunk in out.chunks_mut(8) {
        let bytes = next_u64().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    out
}
