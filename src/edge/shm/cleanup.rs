//! Removing shared memory: every name of one run (`unlink_all`), and the
//! names left behind by dead processes (`sweep_stale`).

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{validate_basename, with_path, SHM_DIR};
use crate::edge::proc::syscall;

/// Removes every shared-memory name of `basename`: `<basename>_*` (volumes),
/// `<basename>.*` (companion segments such as the stream registry) and
/// `<basename>-gen*` (later recovery generations), both in `/dev/shm` and
/// in `fallback_dir`. Returns how many were removed.
///
/// Names are found by listing the directories rather than by trying every
/// index, because pools create volumes at random indices. Entries that
/// vanish meanwhile are fine; other failures are reported after every
/// candidate has been tried.
pub fn unlink_all(basename: &str, fallback_dir: &Path) -> io::Result<usize> {
    validate_basename(basename)?;
    let mut removed = 0;
    let mut first_error = None;
    for dir in [Path::new(SHM_DIR), fallback_dir] {
        match unlink_matching(dir, basename) {
            Ok(count) => removed += count,
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(removed),
    }
}

pub(super) fn unlink_matching(dir: &Path, basename: &str) -> io::Result<usize> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(with_path(err, dir)),
    };
    let mut removed = 0;
    let mut first_error = None;
    for entry in entries.flatten() {
        if !belongs_to(entry.file_name().as_bytes(), basename) {
            continue;
        }
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                first_error.get_or_insert(with_path(err, &path));
            }
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(removed),
    }
}

/// Whether the file `name` is one of `basename`'s shared-memory names. The
/// separator check keeps `morloc-1-ab_0` from matching basename `morloc-1-a`.
pub(super) fn belongs_to(name: &[u8], basename: &str) -> bool {
    match name.strip_prefix(basename.as_bytes()) {
        Some(rest) => rest.starts_with(b"_") || rest.starts_with(b".") || rest.starts_with(b"-gen"),
        None => false,
    }
}

/// Removes `/dev/shm/morloc-<pid>-*` entries whose pid is no longer alive,
/// as every reference server does at start-up to clean up after crashed
/// runs. Entries of live pids, and names without a parsable pid, are never
/// touched. Returns how many were removed.
///
/// Liveness is `kill(pid, 0)`: only `ESRCH` counts as dead (`EPERM` means
/// the process exists under another user). Like the reference, this assumes
/// the writers share our pid namespace.
pub fn sweep_stale() -> usize {
    sweep_stale_in(Path::new(SHM_DIR))
}

pub(super) fn sweep_stale_in(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = owner_pid(entry.file_name().as_bytes()) else {
            continue;
        };
        if pid_alive(pid) {
            continue;
        }
        if fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in a `morloc-<pid>-...` name, if it is a plausible process id.
pub(super) fn owner_pid(name: &[u8]) -> Option<i32> {
    let rest = name.strip_prefix(b"morloc-")?;
    let digits_end = rest.iter().position(|byte| !byte.is_ascii_digit())?;
    if digits_end == 0 || rest[digits_end] != b'-' {
        return None;
    }
    let digits = std::str::from_utf8(&rest[..digits_end]).ok()?;
    // i32 keeps the pid positive for kill(2); 0 would address our own group.
    let pid: i32 = digits.parse().ok()?;
    (pid > 0).then_some(pid)
}

pub(super) fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    match syscall!(kill(pid, 0)) {
        Ok(_) => true,
        Err(err) => err.raw_os_error() != Some(libc::ESRCH),
    }
}
