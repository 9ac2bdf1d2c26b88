//! The Unix-socket connections of calls: sockets made and watched ahead of
//! a call (a pool process's [`Spare`]) and the non-blocking `connect` to a
//! pool.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use mio::net::UnixStream;
use mio::{Interest, Registry, Token};

use crate::edge::proc::syscall;
use crate::edge::reactor::pools::Spare;
use crate::edge::reactor::Sources;

/// A new spare socket, watched (readable) by `registry` under a token of
/// `sources` that names no source yet.
pub(in crate::edge::reactor) fn spare(
    registry: &Registry,
    sources: &mut Sources,
) -> io::Result<Spare> {
    let mut socket = stream(unix_socket()?);
    let token = sources.reserve();
    // Through the stream, so that the poller knows it as the stream's own
    // registration (a later `reregister` checks that).
    registry.register(&mut socket, token, Interest::READABLE)?;
    Ok(Spare { token, socket })
}

fn stream(socket: OwnedFd) -> UnixStream {
    UnixStream::from_std(std::os::unix::net::UnixStream::from(socket))
}

/// A new non-blocking, close-on-exec Unix stream socket, not connected.
fn unix_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call; a valid descriptor is owned by the OwnedFd.
    let fd = syscall!(socket(
        libc::AF_UNIX,
        libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        0
    ))?;
    // SAFETY: `fd` was just created and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A connection to the pool listening at `path`: the pool process's spare
/// (watched already under its token), or else a new socket, watched once
/// connected under a new token of `sources`.
pub(super) fn new_connection(
    spare: Option<Spare>,
    path: &Path,
    registry: &Registry,
    sources: &mut Sources,
) -> Result<(Token, UnixStream), Failed> {
    let (token, mut stream) = match spare {
        Some(Spare { token, socket }) => (Some(token), socket),
        None => (None, stream(unix_socket().map_err(Failed::Refused)?)),
    };
    connect_unix(&stream, path).map_err(Failed::Refused)?;
    let token = match token {
        Some(token) => token,
        None => {
            let token = sources.reserve();
            registry
                .register(&mut stream, token, Interest::READABLE)
                .map_err(Failed::Unwatched)?;
            token
        }
    };
    Ok((token, stream))
}

/// Why [`new_connection`] failed.
pub(super) enum Failed {
    /// No socket, or the pool refused the connection.
    Refused(io::Error),
    /// The poller cannot watch it.
    Unwatched(io::Error),
}

/// Connects `socket` (from [`unix_socket`], not connected yet) to the pool
/// listening at `path`. Like `UnixStream::connect`, a connection still in
/// progress counts as made; a full listen backlog is an error.
fn connect_unix(socket: &UnixStream, path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("socket path too long or not a path: {}", path.display()),
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, &b) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = b as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
    let at = (&addr as *const libc::sockaddr_un).cast();
    // SAFETY: `addr` is a valid sockaddr_un of at least `len` bytes, and
    // `socket` an open socket.
    match syscall!(connect(socket.as_raw_fd(), at, len)) {
        Err(e) if e.raw_os_error() != Some(libc::EINPROGRESS) => Err(e),
        _ => Ok(()),
    }
}
