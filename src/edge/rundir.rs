//! Run directories: where a served program's pool sockets, shared-memory
//! fallback files, result files and the pools' own temporary files live, and
//! the removal of the directories that dead runs left behind.
//!
//! A server killed with SIGKILL cannot remove its run directory. So each run
//! directory holds a lock file, [`LOCK_NAME`], which the server keeps open and
//! `flock`ed for as long as it lives; the kernel drops the lock when the
//! process dies, however it dies. At start-up a server removes every
//! `morloc.*` directory in `/tmp` whose lock file it can lock: its owner is
//! gone. A lock is more reliable than a recorded pid: a pid may be reused by
//! an unrelated process, and means nothing across pid namespaces that share
//! `/tmp`. The lock file also names the run's shared-memory basename, so the
//! run's `/dev/shm` files go with it.
//!
//! Never touched: directories without the lock file (the reference server's,
//! or a run directory whose lock is not in place yet), directories of other
//! users, symlinks, and directories whose lock is held (live servers, or
//! another server sweeping the same directory at the same moment).

#![deny(clippy::undocumented_unsafe_blocks)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::edge::proc::{self, syscall};
use crate::edge::shm;

/// The lock file in every run directory of ours.
pub const LOCK_NAME: &str = "morloc-mcp.lock";
/// The pools' `TMPDIR`, inside the run directory.
pub const POOL_TMP_NAME: &str = "tmp";

/// A live run directory. The lock is held until this is dropped, so drop it
/// only after the directory is removed (or when the process ends).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    /// INVARIANT: `flock(LOCK_EX)` is held on this file, `<path>/LOCK_NAME`.
    _lock: File,
}

impl RunDir {
    /// Creates `/tmp/morloc.XXXXXX` (mode 0700) with its lock held and an
    /// empty `tmp/` for the pools. `basename` is the run's shared-memory
    /// basename, recorded in the lock file.
    pub fn create(basename: &str) -> io::Result<RunDir> {
        RunDir::create_in(Path::new("/tmp"), basename)
    }

    /// [`RunDir::create`] under `parent`.
    pub fn create_in(parent: &Path, basename: &str) -> io::Result<RunDir> {
        let path = proc::make_tmpdir_in(parent)?;
        match RunDir::lock(&path, basename) {
            Ok(lock) => Ok(RunDir { path, _lock: lock }),
            Err(err) => {
                let _ = proc::remove_tmpdir(&path);
                Err(err)
            }
        }
    }

    /// Writes and locks the lock file under a temporary name, then renames
    /// it into place: a sweeper can only ever see the lock file locked.
    fn lock(dir: &Path, basename: &str) -> io::Result<File> {
        let staged = dir.join(".lock.new");
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&staged)
            .map_err(|e| with_path(e, &staged))?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        syscall!(flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB))
            .map_err(|e| with_path(e, &staged))?;
        file.write_all(format!("{basename}\n").as_bytes())
            .map_err(|e| with_path(e, &staged))?;
        fs::create_dir(dir.join(POOL_TMP_NAME)).map_err(|e| with_path(e, dir))?;
        fs::rename(&staged, dir.join(LOCK_NAME)).map_err(|e| with_path(e, &staged))?;
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory the pools get as `TMPDIR`.
    pub fn pool_tmp(&self) -> PathBuf {
        self.path.join(POOL_TMP_NAME)
    }
}

/// Removes the run directories of dead runs in `/tmp`, with their
/// shared-memory files. Returns how many directories were removed.
pub fn sweep_dead() -> usize {
    sweep_dead_in(Path::new("/tmp"))
}

/// [`sweep_dead`] in `parent`.
pub fn sweep_dead_in(parent: &Path) -> usize {
    let Ok(entries) = fs::read_dir(parent) else {
        return 0;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if !is_run_dir_name(name) {
            continue;
        }
        let dir = entry.path();
        // Not followed: a symlink is never a run directory.
        let Ok(meta) = fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        if remove_if_dead(&dir) {
            removed += 1;
        }
    }
    removed
}

/// `morloc.` and the six characters mkdtemp chose.
fn is_run_dir_name(name: &str) -> bool {
    name.strip_prefix("morloc.")
        .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes `dir` when its lock file exists and can be locked.
fn remove_if_dead(dir: &Path) -> bool {
    let lock_path = dir.join(LOCK_NAME);
    let Ok(mut lock) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(&lock_path)
    else {
        // No lock file: not ours, or not set up yet.
        return false;
    };
    // SAFETY: flock on a descriptor we own; no memory is passed.
    if syscall!(flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB)).is_err() {
        // Held: the owner is alive (or another server is sweeping it).
        return false;
    }
    let mut text = String::new();
    let _ = Read::take(&mut lock, 256).read_to_string(&mut text);
    let basename = text.trim_end();
    if is_own_basename(basename) {
        let _ = shm::unlink_all(basename, dir);
    }
    // The lock stays held until the directory is gone.
    let gone = proc::remove_tmpdir(dir).is_ok();
    drop(lock);
    gone
}

/// A basename [`shm::new_basename`] could have made: `morloc-<pid>-<16 hex>`.
fn is_own_basename(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("morloc-") else {
        return false;
    };
    let Some((pid, random)) = rest.split_once('-') else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && random.len() == 16
        && random
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn with_path(err: io::Error, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests;
