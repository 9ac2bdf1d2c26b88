//! What pool processes print: their output pipe is read into lines (split
//! by [`split_lines`], pure), echoed on stderr through the logger (at
//! `warn`: a program's own output, usually its errors), kept as the process's tail
//! for error messages, and routed as MCP log messages by one router
//! (`reactor::pool_line_targets`, which the lines reach as
//! [`PoolNews::Printed`]) to every audience that asked for them: the
//! stdio session, streaming HTTP requests of sessions with a log level, and
//! the modern calls running on the process.

use std::ops::ControlFlow;
use std::os::fd::AsRawFd;

use mio::unix::SourceFd;

use super::{Cx, PoolNews, PoolSet, Proc};
use crate::edge::log;
use crate::edge::reactor::byteio;
use crate::protocol::log::{Format, Level, Record, Value};

/// Lines of pool output kept for error messages.
const OUTPUT_TAIL: usize = 20;
/// Pool output lines longer than this are split.
const MAX_LOG_LINE: usize = 64 * 1024;

/// Takes the complete lines out of `buf` (and pieces of [`MAX_LOG_LINE`]
/// bytes of a longer one; the partial last line too if `flush_partial`),
/// leaving the rest for the next read.
fn split_lines(buf: &mut Vec<u8>, flush_partial: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut start = 0;
    while let Some(pos) = buf[start..].iter().position(|&b| b == b'\n') {
        lines.push(String::from_utf8_lossy(&buf[start..start + pos]).into_owned());
        start += pos + 1;
    }
    while buf.len() - start > MAX_LOG_LINE {
        lines.push(String::from_utf8_lossy(&buf[start..start + MAX_LOG_LINE]).into_owned());
        start += MAX_LOG_LINE;
    }
    if flush_partial && start < buf.len() {
        lines.push(String::from_utf8_lossy(&buf[start..]).into_owned());
        start = buf.len();
    }
    buf.drain(..start);
    lines
}

impl PoolSet {
    /// Reads what process `i` printed so far.
    pub(in crate::edge::reactor) fn read_output(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        let Some((_, fd)) = self[(program, i)].output.pipe.as_ref() else {
            return;
        };
        // The pipe stays open while it is read: the pool's `output` owns it.
        let mut pipe = byteio::RawReader(fd.as_raw_fd());
        let mut buf = [0u8; 16 * 1024];
        let end = byteio::read_until(&mut pipe, &mut buf, |chunk| {
            let out = &mut self[(program, i)].output.buf;
            out.extend_from_slice(chunk);
            // Bound the buffer even if a pool writes without newlines.
            if out.len() > 4 * MAX_LOG_LINE {
                self.emit_lines(cx, program, i, false);
            }
            ControlFlow::Continue(())
        });
        let closed = matches!(end, byteio::ReadEnd::Eof);
        self.emit_lines(cx, program, i, closed);
        if closed {
            self.close_output(cx, program, i);
        }
    }

    /// Echoes the complete lines read on stderr, keeps them as the tail and
    /// passes them on ([`PoolNews::Printed`]).
    fn emit_lines(&mut self, cx: &mut Cx, program: usize, i: Proc, flush_partial: bool) {
        let lines = split_lines(&mut self[(program, i)].output.buf, flush_partial);
        if lines.is_empty() {
            return;
        }
        let label = self[(program, i)].label();
        let logger = format!("pool:{label}");
        if log::enabled(Level::Warn) {
            // A replica's lines say which process printed them; in json
            // every line names its pool.
            let prefix = if self[(program, i)].replica > 0 {
                format!("[{label}] ")
            } else {
                String::new()
            };
            // In json, a line printed while the process runs one traced
            // call names that call's trace.
            let trace_id = match log::format() {
                Format::Json => (cx.traces)(program, i),
                Format::Text => None,
            };
            for line in &lines {
                let mut pool = vec![("pool", Value::Str(&label))];
                if let Some(t) = &trace_id {
                    pool.push(("trace_id", Value::Str(t)));
                }
                let (text, fields) = match log::format() {
                    Format::Text => (format!("{prefix}{line}"), &pool[..0]),
                    Format::Json => (line.clone(), &pool[..]),
                };
                log::emit(&Record {
                    level: Level::Warn,
                    msg: &text,
                    fields,
                    prefixed: false,
                });
            }
        }
        let tail = &mut self[(program, i)].output.tail;
        for line in &lines {
            if tail.len() == OUTPUT_TAIL {
                tail.pop_front();
            }
            tail.push_back(line.clone());
        }
        self.news.push(PoolNews::Printed {
            program,
            proc: i,
            logger,
            lines,
        });
    }

    pub(super) fn close_output(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        if let Some((token, fd)) = self[(program, i)].output.pipe.take() {
            let _ = cx.registry.deregister(&mut SourceFd(&fd.as_raw_fd()));
            cx.sources.remove(&token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_at_newlines_and_long_ones_in_pieces() {
        let mut buf = b"one\ntwo\npart".to_vec();
        assert_eq!(split_lines(&mut buf, false), ["one", "two"]);
        assert_eq!(buf, b"part");
        assert_eq!(split_lines(&mut buf, true), ["part"]);
        assert!(buf.is_empty());
        let mut long = vec![b'x'; MAX_LOG_LINE + 3];
        let lines = split_lines(&mut long, false);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), MAX_LOG_LINE);
        assert_eq!(long, b"xxx");
    }
}
