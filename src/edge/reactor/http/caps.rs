//! The connection caps: how many connections the open-file limit allows,
//! and the 503 that answers a connection over a cap.

use std::io::Write;

use mio::net::TcpStream;

use super::{FD_RESERVE, MAX_CONNECTIONS};
use crate::edge::proc::syscall;
use crate::protocol::http::{self, json_error};

/// Raises the soft open-file limit as far as the connection cap can use
/// (each connection may also hold a socket to a pool) and returns how many
/// connections fit under the resulting limit.
pub(super) fn connection_cap() -> usize {
    let wanted: libc::rlim_t = 2 * MAX_CONNECTIONS as libc::rlim_t + FD_RESERVE;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct we own.
    if syscall!(getrlimit(libc::RLIMIT_NOFILE, &mut limit)).is_err() {
        return MAX_CONNECTIONS;
    }
    let soft = if limit.rlim_cur >= wanted {
        wanted
    } else {
        let raised = libc::rlimit {
            rlim_cur: wanted.min(limit.rlim_max),
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct we own.
        match syscall!(setrlimit(libc::RLIMIT_NOFILE, &raised)) {
            Ok(_) => raised.rlim_cur,
            Err(_) => limit.rlim_cur,
        }
    };
    let cap = soft.saturating_sub(FD_RESERVE) / 2;
    usize::try_from(cap)
        .unwrap_or(MAX_CONNECTIONS)
        .clamp(1, MAX_CONNECTIONS)
}

/// Answers a connection over a cap with 503 and closes it.
pub(super) fn refuse(mut stream: TcpStream, message: &str) {
    let mut out = Vec::new();
    http::write_response(
        &mut out,
        503,
        Some("application/json"),
        &[("Retry-After", "1")],
        &json_error(message),
        false,
    );
    let _ = stream.write(&out);
}
