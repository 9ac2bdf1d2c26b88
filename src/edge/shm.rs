//! The server's side of Morloc shared memory: naming, creating volume 0,
//! reading pool results through relative pointers, and cleaning up.
//!
//! Pools hand large results back as *relptrs* into POSIX shared-memory
//! volumes named `<basename>_<index>` (files under `/dev/shm`, or regular
//! files in the per-run tmpdir when `/dev/shm` is too small). The server
//! only ever reads those volumes, with one exception: it creates volume 0
//! before starting any pool, so that the processes of one pool do not race
//! to initialise it. Layouts follow the v0.98.2 runtime: a 168-byte volume
//! header, then a data region tiled by blocks with 16-byte headers; all
//! integers little-endian.
//!
//! The module never allocates inside a volume and never takes the
//! cross-process lock; that is only needed by writers.
//!
//! Removing names (one run's, and those of dead runs) lives in `cleanup`.

#![deny(clippy::undocumented_unsafe_blocks)]

use crate::edge::log;
use std::cell::RefCell;
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::edge::proc::syscall;

mod cleanup;
#[cfg(test)]
use cleanup::{owner_pid, sweep_stale_in};
pub use cleanup::{sweep_stale, unlink_all};

/// Size of the volume header that precedes the data region.
pub const HEADER_SIZE: usize = 168;
/// Size of the header in front of every block in the data region.
pub const BLOCK_HEADER_SIZE: usize = 16;
/// First four bytes of every volume (`f0 0d ca fe` on disk).
pub const VOLUME_MAGIC: u32 = 0xFECA_0DF0;
/// First four bytes of every block header (`f0 0d b1 0c` on disk).
pub const BLOCK_MAGIC: u32 = 0x0CB1_0DF0;
/// Data-region size of the volume 0 the server creates (the reference's
/// `shinit(basename, 0, 0xffff)`).
pub const VOLUME0_DATA_SIZE: usize = 0xffff;
/// Highest volume index a relptr can name (15 bits).
pub const MAX_VOLUME_INDEX: u16 = 0x7fff;

/// Where POSIX shared-memory objects live on Linux.
const SHM_DIR: &str = "/dev/shm";
/// Capacity of the NUL-terminated `volume_name` header field.
const VOLUME_NAME_CAPACITY: usize = 128;
/// Header field offsets (see the layout table in the pool protocol notes).
const OFFSET_NAME: usize = 4;
const OFFSET_INDEX: usize = 132;
const OFFSET_VOLUME_SIZE: usize = 136;
const OFFSET_RELATIVE: usize = 144;
const OFFSET_LOCK: usize = 152;
const OFFSET_CURSOR: usize = 160;
/// Low 48 bits of a relptr: the byte offset in the data region.
const RELPTR_OFFSET_MASK: i64 = 0xffff_ffff_ffff;

/// A fresh shared-memory basename: `morloc-<our pid>-<16 lowercase hex>`.
///
/// The pid prefix is load-bearing: every Morloc server sweeps `/dev/shm` at
/// start-up and deletes `morloc-<pid>-*` entries whose pid is dead (see
/// [`sweep_stale`]), so the prefix must name a live process, ours.
pub fn new_basename() -> String {
    format_basename(std::process::id(), random_u64())
}

fn format_basename(pid: u32, random: u64) -> String {
    format!("morloc-{pid}-{random:016x}")
}

/// 64 random bits from the kernel, or, if there is no random source, the
/// clock and pid pushed through a mixer (uniqueness matters here, not
/// unpredictability).
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if crate::edge::proc::fill_random(&mut bytes).is_ok() {
        return u64::from_le_bytes(bytes);
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    mix64(nanos ^ mix64(u64::from(std::process::id())))
}

/// The splitmix64 finaliser: a bijection on u64 that spreads every input
/// bit over the whole output.
fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The first `HEADER_SIZE + BLOCK_HEADER_SIZE` bytes of a freshly created
/// volume: the volume header (magic, `name`, `index`, `data_size`, relative
/// offset 0, unlocked, cursor 0) followed by one free block spanning the
/// whole data region.
///
/// `name` must be shorter than 128 bytes (it is stored NUL-terminated) and
/// `data_size` at least `BLOCK_HEADER_SIZE`; longer names are cut.
pub fn volume_header(
    name: &str,
    index: i32,
    data_size: usize,
) -> [u8; HEADER_SIZE + BLOCK_HEADER_SIZE] {
    let mut bytes = [0u8; HEADER_SIZE + BLOCK_HEADER_SIZE];
    bytes[0..4].copy_from_slice(&VOLUME_MAGIC.to_le_bytes());
    let name = &name.as_bytes()[..name.len().min(VOLUME_NAME_CAPACITY - 1)];
    bytes[OFFSET_NAME..OFFSET_NAME + name.len()].copy_from_slice(name);
    bytes[OFFSET_INDEX..OFFSET_INDEX + 4].copy_from_slice(&index.to_le_bytes());
    bytes[OFFSET_VOLUME_SIZE..OFFSET_VOLUME_SIZE + 8]
        .copy_from_slice(&(data_size as u64).to_le_bytes());
    bytes[OFFSET_RELATIVE..OFFSET_RELATIVE + 8].copy_from_slice(&0u64.to_le_bytes());
    bytes[OFFSET_LOCK..OFFSET_LOCK + 4].copy_from_slice(&0u32.to_le_bytes());
    bytes[OFFSET_CURSOR..OFFSET_CURSOR + 8].copy_from_slice(&0i64.to_le_bytes());
    let block = HEADER_SIZE;
    bytes[block..block + 4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
    bytes[block + 4..block + 8].copy_from_slice(&0u32.to_le_bytes());
    let free = data_size.saturating_sub(BLOCK_HEADER_SIZE) as u64;
    bytes[block + 8..block + 16].copy_from_slice(&free.to_le_bytes());
    bytes
}

/// Volume 0, created by the server before any pool starts and kept mapped
/// until dropped. Dropping unmaps it but leaves the name in place; remove
/// it with [`unlink_all`].
pub struct Volume0 {
    map: Mapping,
    /// What the header's `volume_name` says: `<basename>_0`, or the absolute
    /// path for a file-backed volume.
    name: String,
    path: PathBuf,
    file_backed: bool,
}

impl Volume0 {
    /// Creates (or, if someone already did, opens) `<basename>_0`.
    ///
    /// Tries `/dev/shm` first. If that is missing, not writable or too full
    /// to hold the volume, falls back to the regular file
    /// `<fallback_dir>/<basename>_0`, whose absolute path then becomes the
    /// volume name, as the reference runtime does.
    ///
    /// Like the reference, this opens with `O_CREAT` but without `O_EXCL`:
    /// a volume that already has a size is mapped as it is, not
    /// re-initialised (basenames are unique per run, so this only happens
    /// if a pool raced ahead, and rewriting the header under it would be
    /// worse). The mode is 0600: pools run as the same user.
    pub fn create(basename: &str, fallback_dir: &Path) -> io::Result<Volume0> {
        Volume0::create_with(basename, fallback_dir, true)
    }

    fn create_with(basename: &str, fallback_dir: &Path, try_shm: bool) -> io::Result<Volume0> {
        validate_basename(basename)?;
        let file_name = format!("{basename}_0");
        let shm_error = if try_shm {
            let path = Path::new(SHM_DIR).join(&file_name);
            match Volume0::open_or_init(&path, &file_name, false) {
                Ok(volume) => return Ok(volume),
                Err(err) => Some(err),
            }
        } else {
            None
        };
        let fallback_dir = std::path::absolute(fallback_dir)?;
        let path = fallback_dir.join(&file_name);
        let Some(label) = path.to_str().map(str::to_owned) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "shared-memory fallback path {} is not UTF-8",
                    path.display()
                ),
            ));
        };
        if label.len() >= VOLUME_NAME_CAPACITY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("shared-memory fallback path {label} is longer than 127 bytes"),
            ));
        }
        match Volume0::open_or_init(&path, &label, true) {
            Ok(volume) => Ok(volume),
            Err(err) => {
                let mut msg = format!("cannot create shared-memory volume {label}: {err}");
                if let Some(shm_error) = shm_error {
                    msg = format!("{msg} (and in {SHM_DIR}: {shm_error})");
                }
                Err(io::Error::new(err.kind(), msg))
            }
        }
    }

    /// Opens or creates the file at `path`, sizes it if new, maps it and
    /// writes the header if new. `label` is the header's volume name.
    fn open_or_init(path: &Path, label: &str, file_backed: bool) -> io::Result<Volume0> {
        let full_size = HEADER_SIZE + VOLUME0_DATA_SIZE;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        let existing = file.metadata()?.len();
        let created = existing == 0;
        if created {
            if let Err(err) = reserve(&file, full_size) {
                let _ = fs::remove_file(path);
                return Err(err);
            }
        } else if existing < (HEADER_SIZE + BLOCK_HEADER_SIZE) as u64
            || existing > isize::MAX as u64
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "existing shared-memory volume {} has unusable size {existing}",
                    path.display()
                ),
            ));
        }
        let len = if created {
            full_size
        } else {
            existing as usize
        };
        let map = match Mapping::new(file.as_fd(), len, true) {
            Ok(map) => map,
            Err(err) => {
                if created {
                    let _ = fs::remove_file(path);
                }
                return Err(err);
            }
        };
        if created {
            let header = volume_header(label, 0, VOLUME0_DATA_SIZE);
            // SAFETY: the mapping is writable and `len >= header.len()`; the
            // file is new, so no other process has mapped it yet.
            unsafe { ptr::copy_nonoverlapping(header.as_ptr(), map.ptr.as_ptr(), header.len()) };
        } else if read_u32(map.bytes(), 0) != VOLUME_MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "existing shared-memory volume {} has no volume header",
                    path.display()
                ),
            ));
        }
        Ok(Volume0 {
            map,
            name: label.to_owned(),
            path: path.to_owned(),
            file_backed,
        })
    }

    /// The header's volume name: `<basename>_0`, or an absolute path.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the volume lives in the file system.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True for the regular-file fallback, false for `/dev/shm`.
    pub fn is_file_backed(&self) -> bool {
        self.file_backed
    }

    /// The whole mapping, header included (other processes may be writing
    /// to it: a snapshot for diagnostics and tests, not a stable view).
    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }
}

impl fmt::Debug for Volume0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Volume0")
            .field("path", &self.path)
            .field("len", &self.map.len)
            .finish()
    }
}

/// Sizes a new volume file and makes sure its pages can be backed.
///
/// `ftruncate` alone only sets the size; on a full tmpfs the first write to
/// an unbacked page then raises SIGBUS. `posix_fallocate` reserves the pages
/// now and fails with ENOSPC instead, so a small `/dev/shm` leads to the
/// file fallback rather than a crash.
fn reserve(file: &File, size: usize) -> io::Result<()> {
    // SAFETY: ftruncate on a descriptor we own.
    syscall!(ftruncate(file.as_raw_fd(), size as libc::off_t))?;
    // SAFETY: posix_fallocate on a descriptor we own; it reports errors by
    // return value, not errno.
    let res = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size as libc::off_t) };
    if res != 0 {
        return Err(io::Error::from_raw_os_error(res));
    }
    Ok(())
}

/// One `mmap` of a whole file, unmapped on drop.
struct Mapping {
    /// INVARIANT: `ptr .. ptr + len` is mapped (at least readable) until drop.
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` shared; the descriptor may be closed after.
    fn new(fd: BorrowedFd<'_>, len: usize, writable: bool) -> io::Result<Mapping> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint) of
        // an open descriptor; no existing memory is affected.
        let addr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let Some(ptr) = NonNull::new(addr.cast::<u8>()) else {
            return Err(io::Error::other("mmap returned a null address"));
        };
        Ok(Mapping { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: by the invariant the range is mapped and readable for as
        // long as `self` lives. Other processes may write to it concurrently;
        // callers treat the contents as untrusted input and copy out promptly.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range came from mmap and nothing borrows it any more
        // (borrows are tied to `&self`).
        let _ = syscall!(munmap(self.ptr.as_ptr().cast(), self.len));
    }
}

/// An error resolving a relptr.
#[derive(Debug)]
pub enum ShmError {
    /// Bit 63 is set: the relptr is the null sentinel (or garbage).
    NullRelptr(i64),
    /// Neither `/dev/shm/<name>` nor `<fallback_dir>/<name>` exists.
    VolumeMissing { name: String, fallback_dir: PathBuf },
    /// The file exists but is not a volume we can read.
    BadVolume { path: PathBuf, reason: String },
    /// The offset lies outside the volume's data region.
    OutOfRange {
        volume: u16,
        offset: u64,
        data_size: u64,
    },
    /// Opening, inspecting or mapping the file failed.
    Io { path: PathBuf, source: io::Error },
}

impl fmt::Display for ShmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShmError::NullRelptr(relptr) => {
                write!(f, "relptr {:#018x} is null (bit 63 set)", *relptr as u64)
            }
            ShmError::VolumeMissing { name, fallback_dir } => write!(
                f,
                "shared-memory volume {name} not found in {SHM_DIR} or {}",
                fallback_dir.display()
            ),
            ShmError::BadVolume { path, reason } => {
                write!(f, "shared-memory volume {} is invalid: {reason}", path.display())
            }
            ShmError::OutOfRange {
                volume,
                offset,
                data_size,
            } => write!(
                f,
                "offset {offset} is outside the {data_size}-byte data region of shared-memory volume {volume}"
            ),
            ShmError::Io { path, source } => {
                write!(f, "cannot map shared-memory volume {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ShmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShmError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Read-only access to the volumes of one basename, mapped lazily.
///
/// Caching and lifetimes: [`ShmReader::resolve`] takes `&self` and returns a
/// slice borrowed from `self`, so that a decoder can follow many relptrs
/// while holding earlier slices. Mappings therefore live in a `RefCell` and
/// are only ever *added* through `&self`; the memory a slice points into
/// stays mapped until [`ShmReader::clear`] or drop, which need `&mut self`
/// and so cannot run while any slice is alive.
///
/// Staleness: a pool may unlink a volume and later create a new one with the
/// same index (and recovery switches basenames). A cached mapping would keep
/// showing the old, unlinked contents. The cache is meant to live for one
/// result: call `clear` after each result has been copied out. Within one
/// result, a relptr past the end of a cached volume triggers a re-open; if
/// the file changed (other inode or size), the new mapping replaces the old
/// in the cache and the old one is kept, still mapped, until `clear`.
///
/// SIGBUS: the header's `volume_size` is checked against the file size
/// (`fstat`) when mapping, so slices never extend past the end of the file
/// as it was then. If another process truncates the file afterwards, reading
/// the lost pages raises SIGBUS, which no check here can prevent. Morloc
/// processes never shrink a volume (they unlink and create new ones, which
/// leaves existing mappings intact), so only a foreign or broken process
/// could cause it.
pub struct ShmReader {
    basename: String,
    fallback_dir: PathBuf,
    /// The volumes mapped, by index: a few at most (Morloc opens a new
    /// volume only when the others are full), so a list, not a map.
    volumes: RefCell<Vec<(u16, ReadVolume)>>,
    /// Replaced mappings that slices handed out earlier may still point into.
    retired: RefCell<Vec<ReadVolume>>,
}

struct ReadVolume {
    map: Mapping,
    /// INVARIANT: `HEADER_SIZE + data_size <= map.len`.
    data_size: u64,
    device: u64,
    inode: u64,
}

impl ShmReader {
    /// A reader for `<basename>_<i>` in `/dev/shm`, then in `fallback_dir`.
    pub fn new(basename: &str, fallback_dir: &Path) -> ShmReader {
        ShmReader {
            basename: basename.to_owned(),
            fallback_dir: fallback_dir.to_owned(),
            volumes: RefCell::new(Vec::new()),
            retired: RefCell::new(Vec::new()),
        }
    }

    /// The basename this reader resolves against.
    pub fn basename(&self) -> &str {
        &self.basename
    }

    /// The bytes from the address `relptr` points at to the end of its
    /// volume's data region.
    ///
    /// Relptr layout: bit 63 must be clear, bits 62..48 are the volume
    /// index, bits 47..0 the offset into the data region.
    pub fn resolve(&self, relptr: i64) -> Result<&[u8], ShmError> {
        if relptr < 0 {
            return Err(ShmError::NullRelptr(relptr));
        }
        let volume = (relptr >> 48) as u16 & MAX_VOLUME_INDEX;
        let offset = (relptr & RELPTR_OFFSET_MASK) as u64;
        let (ptr, data_size) = self.lookup(volume, offset)?;
        // `lookup` guarantees `offset < data_size` and the invariant on
        // ReadVolume bounds `data_size` by the mapping, so both fit in usize.
        let start = HEADER_SIZE + offset as usize;
        let len = (data_size - offset) as usize;
        // SAFETY: `start + len = HEADER_SIZE + data_size <= map.len`, so the
        // range is inside a live mapping, which stays mapped until `clear`
        // or drop; both take `&mut self`, so not while this borrow lives.
        Ok(unsafe { std::slice::from_raw_parts(ptr.as_ptr().add(start), len) })
    }

    /// Unmaps every cached volume; later relptrs map them afresh.
    pub fn clear(&mut self) {
        self.volumes.get_mut().clear();
        self.retired.get_mut().clear();
    }

    /// Start of the mapping and data size of `volume`, which must contain
    /// `offset`.
    fn lookup(&self, volume: u16, offset: u64) -> Result<(NonNull<u8>, u64), ShmError> {
        let cached = self
            .volumes
            .borrow()
            .iter()
            .find(|(index, _)| *index == volume)
            .map(|(_, vol)| (vol.map.ptr, vol.data_size, vol.device, vol.inode));
        match cached {
            Some((ptr, data_size, _, _)) if offset < data_size => Ok((ptr, data_size)),
            Some((_, data_size, device, inode)) => {
                let out_of_range = ShmError::OutOfRange {
                    volume,
                    offset,
                    data_size,
                };
                let Ok(fresh) = self.open_volume(volume) else {
                    return Err(out_of_range);
                };
                if (fresh.device, fresh.inode, fresh.data_size) == (device, inode, data_size) {
                    return Err(out_of_range);
                }
                self.insert(volume, fresh, offset)
            }
            None => {
                let fresh = self.open_volume(volume)?;
                self.insert(volume, fresh, offset)
            }
        }
    }

    fn insert(
        &self,
        volume: u16,
        fresh: ReadVolume,
        offset: u64,
    ) -> Result<(NonNull<u8>, u64), ShmError> {
        let (ptr, data_size) = (fresh.map.ptr, fresh.data_size);
        let mut volumes = self.volumes.borrow_mut();
        match volumes.iter_mut().find(|(index, _)| *index == volume) {
            Some((_, old)) => self
                .retired
                .borrow_mut()
                .push(std::mem::replace(old, fresh)),
            None => volumes.push((volume, fresh)),
        }
        drop(volumes);
        if offset >= data_size {
            return Err(ShmError::OutOfRange {
                volume,
                offset,
                data_size,
            });
        }
        Ok((ptr, data_size))
    }

    fn open_volume(&self, volume: u16) -> Result<ReadVolume, ShmError> {
        let name = format!("{}_{volume}", self.basename);
        let shm_path = Path::new(SHM_DIR).join(&name);
        let (file, path) = match open_read_only(&shm_path) {
            Ok(file) => (file, shm_path),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let fallback_path = self.fallback_dir.join(&name);
                match open_read_only(&fallback_path) {
                    Ok(file) => (file, fallback_path),
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        return Err(ShmError::VolumeMissing {
                            name,
                            fallback_dir: self.fallback_dir.clone(),
                        })
                    }
                    Err(source) => {
                        return Err(ShmError::Io {
                            path: fallback_path,
                            source,
                        })
                    }
                }
            }
            Err(source) => {
                return Err(ShmError::Io {
                    path: shm_path,
                    source,
                })
            }
        };
        let bad = |reason: String| ShmError::BadVolume {
            path: path.clone(),
            reason,
        };
        let meta = file.metadata().map_err(|source| ShmError::Io {
            path: path.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(bad("not a regular file".to_owned()));
        }
        let file_size = meta.len();
        if file_size < HEADER_SIZE as u64 {
            return Err(bad(format!(
                "file holds {file_size} bytes, less than the {HEADER_SIZE}-byte header"
            )));
        }
        let Ok(len) = usize::try_from(file_size) else {
            return Err(bad(format!("file size {file_size} is too large to map")));
        };
        let map = Mapping::new(file.as_fd(), len, false).map_err(|source| ShmError::Io {
            path: path.clone(),
            source,
        })?;
        let header = map.bytes();
        let magic = read_u32(header, 0);
        if magic != VOLUME_MAGIC {
            return Err(bad(format!("bad magic {magic:#010x}")));
        }
        let index = read_u32(header, OFFSET_INDEX);
        if index != u32::from(volume) {
            return Err(bad(format!("header says volume index {index}")));
        }
        let data_size = read_u64(header, OFFSET_VOLUME_SIZE);
        if data_size > file_size - HEADER_SIZE as u64 {
            return Err(bad(format!(
                "header claims {data_size} data bytes but the file holds only {}",
                file_size - HEADER_SIZE as u64
            )));
        }
        Ok(ReadVolume {
            map,
            data_size,
            device: meta.dev(),
            inode: meta.ino(),
        })
    }
}

impl fmt::Debug for ShmReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShmReader")
            .field("basename", &self.basename)
            .field("fallback_dir", &self.fallback_dir)
            .field("cached", &self.volumes.borrow().len())
            .finish()
    }
}

/// Opens a volume for reading. `O_NONBLOCK` keeps a FIFO planted under the
/// name from blocking the open; `O_NOFOLLOW` refuses symlinks in the
/// world-writable `/dev/shm`.
fn open_read_only(path: &Path) -> io::Result<File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(buf)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buf)
}

/// Rejects basenames that could escape `/dev/shm`, match unrelated names, or
/// make `<basename>_32767` too long for the 128-byte name field.
fn validate_basename(basename: &str) -> io::Result<()> {
    let longest = basename.len() + "_32767".len();
    if basename.is_empty()
        || basename.contains(['/', '\0'])
        || basename == "."
        || basename == ".."
        || longest >= VOLUME_NAME_CAPACITY
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid shared-memory basename {basename:?}"),
        ));
    }
    Ok(())
}

fn with_path(err: io::Error, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

/// Lets the voidstar decoder follow shared-memory relptrs directly.
impl crate::format::voidstar::Memory for ShmReader {
    fn resolve(&self, relptr: i64) -> Result<&[u8], crate::format::voidstar::DecodeError> {
        use crate::format::voidstar::{DecodeError, DecodeErrorKind};
        ShmReader::resolve(self, relptr).map_err(|e| {
            // The decoder's error carries no text; the reason goes to stderr.
            log::warn(&format!("shared memory: {e}"));
            DecodeError::new(relptr as u64, DecodeErrorKind::BadPointer(relptr))
        })
    }

    fn done_with(&self, relptr: i64, len: usize) {
        self.release(relptr, len);
    }
}

impl ShmReader {
    /// Drops the pages wholly inside the `len` bytes at `relptr` from this
    /// process's memory. The mapping is shared and read-only, so this loses
    /// nothing: the volume keeps the data, and a later read maps the page
    /// again. It keeps a large result from being counted twice, once as
    /// the volume pages read and once as the text made from them.
    pub fn release(&self, relptr: i64, len: usize) {
        let Ok(region) = ShmReader::resolve(self, relptr) else {
            return;
        };
        let len = len.min(region.len());
        // SAFETY: sysconf has no preconditions.
        let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            n if n > 0 => n as usize,
            _ => return,
        };
        let start = region.as_ptr() as usize;
        let first = start.div_ceil(page) * page;
        let end = (start + len) / page * page;
        if end <= first {
            return;
        }
        // SAFETY: `first..end` lies inside a live shared read-only mapping of
        // ours (it is within `region`). MADV_DONTNEED on a shared file mapping
        // only drops our page-table entries; the file keeps its contents, and
        // any slice still pointing there reads the same bytes after a fault.
        let _ = syscall!(madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_DONTNEED
        ));
    }
}

#[cfg(test)]
mod tests;
