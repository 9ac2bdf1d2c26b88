//! The Unix-socket connections of calls: sockets made ahead of a call (a
//! pool process's spare) and the non-blocking `connect` to a pool.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use mio::net::UnixStream;

use crate::edge::proc::syscall;

/// A new non-blocking, close-on-exec Unix stream socket, not connected.
pub(in crate::edge::reactor) fn unix_socket() -> io::Result<OwnedFd> {
    let kind = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: plain system call; a valid descriptor is owned by the OwnedFd.
    let fd = syscall!(socket(libc::AF_UNIX, kind, 0))?;
    // SAFETY: `fd` was just created and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A socket (the pool process's spare, or a new one) connected to the pool
/// listening at `path`.
pub(super) fn new_connection(spare: Option<OwnedFd>, path: &Path) -> io::Result<UnixStream> {
    let socket = match spare {
        Some(fd) => fd,
        None => unix_socket()?,
    };
    let stream = UnixStream::from_std(std::os::unix::net::UnixStream::from(socket));
    connect_unix(&stream, path)?;
    Ok(stream)
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
