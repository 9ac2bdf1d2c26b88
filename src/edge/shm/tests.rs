//! Unit tests of the `shm` module (kept apart from the code they test).

use super::*;
use crate::edge::proc::{make_tmpdir, remove_tmpdir};

/// Removes everything a test created, even when it fails halfway.
struct Cleanup {
    basename: String,
    dir: PathBuf,
}

impl Cleanup {
    fn new() -> Cleanup {
        Cleanup {
            basename: new_basename(),
            dir: make_tmpdir().expect("tmpdir"),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = unlink_all(&self.basename, &self.dir);
        let _ = remove_tmpdir(&self.dir);
    }
}

fn relptr(volume: u16, offset: u64) -> i64 {
    (i64::from(volume) << 48) | offset as i64
}

/// Writes a volume file: header for `index`/`data_size`, then `data`,
/// padded with zeros to `file_data_size` bytes.
fn write_volume(path: &Path, index: i32, data_size: usize, file_data_size: usize, data: &[u8]) {
    let mut bytes = volume_header("test", index, data_size).to_vec();
    bytes.truncate(HEADER_SIZE);
    bytes.extend_from_slice(data);
    bytes.resize(HEADER_SIZE + file_data_size, 0);
    fs::write(path, bytes).expect("write volume");
}

#[test]
fn basename_format() {
    assert_eq!(
        format_basename(4242, 0x0f1e_2d3c_4b5a_6978),
        "morloc-4242-0f1e2d3c4b5a6978"
    );
    assert_eq!(format_basename(1, 0), "morloc-1-0000000000000000");
    let name = new_basename();
    let prefix = format!("morloc-{}-", std::process::id());
    let hex = name.strip_prefix(&prefix).expect("pid prefix");
    assert_eq!(hex.len(), 16);
    assert!(hex
        .bytes()
        .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')));
    assert_ne!(new_basename(), name, "two basenames collide");
    assert_eq!(owner_pid(name.as_bytes()), Some(std::process::id() as i32));
}

#[test]
fn mixer_spreads_bits() {
    assert_ne!(mix64(0), 0);
    assert_ne!(mix64(1), mix64(2));
    let flipped = (mix64(1000) ^ mix64(1001)).count_ones();
    assert!((16..=48).contains(&flipped), "{flipped} bits changed");
}

#[test]
fn header_bytes_match_the_layout() {
    let bytes = volume_header("morloc-1-00ff_0", 0, VOLUME0_DATA_SIZE);
    let mut expected = vec![0xf0, 0x0d, 0xca, 0xfe];
    expected.extend_from_slice(b"morloc-1-00ff_0");
    expected.resize(132, 0); // Rest of the 128-byte name field.
    expected.extend_from_slice(&[0, 0, 0, 0]); // volume_index 0
    expected.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0, 0, 0]); // volume_size 65535
    expected.extend_from_slice(&[0; 8]); // relative_offset
    expected.extend_from_slice(&[0; 4]); // lock
    expected.extend_from_slice(&[0; 4]); // padding
    expected.extend_from_slice(&[0; 8]); // cursor
    assert_eq!(expected.len(), HEADER_SIZE);
    expected.extend_from_slice(&[0xf0, 0x0d, 0xb1, 0x0c]); // block magic
    expected.extend_from_slice(&[0; 4]); // reference count
    expected.extend_from_slice(&[0xef, 0xff, 0, 0, 0, 0, 0, 0]); // 65519
    assert_eq!(bytes.as_slice(), expected.as_slice());

    let long = "x".repeat(200);
    let bytes = volume_header(&long, 3, 100);
    assert_eq!(&bytes[4..131], &long.as_bytes()[..127]);
    assert_eq!(bytes[131], 0, "name stays NUL-terminated");
    assert_eq!(read_u32(&bytes, OFFSET_INDEX), 3);
}

/// The volume-0 header written by the reference server, up to the cursor
/// (which the pool had moved by the time of the snapshot).
#[test]
fn header_matches_reference_snapshot() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/wire/shm/bigList/morloc-14877-e8d392d64dfa1a2f_0");
    let reference = fs::read(&path).expect("fixture volume 0");
    assert_eq!(reference.len(), HEADER_SIZE + VOLUME0_DATA_SIZE);
    let ours = volume_header("morloc-14877-e8d392d64dfa1a2f_0", 0, VOLUME0_DATA_SIZE);
    assert_eq!(&ours[..OFFSET_CURSOR], &reference[..OFFSET_CURSOR]);
}

#[test]
fn volume0_in_dev_shm() {
    let cleanup = Cleanup::new();
    let volume = Volume0::create(&cleanup.basename, &cleanup.dir).expect("create");
    let name = format!("{}_0", cleanup.basename);
    assert!(!volume.is_file_backed());
    assert_eq!(volume.name(), name);
    assert_eq!(volume.path(), Path::new(SHM_DIR).join(&name));
    let expected = volume_header(&name, 0, VOLUME0_DATA_SIZE);
    assert_eq!(&volume.bytes()[..expected.len()], expected.as_slice());
    let on_disk = fs::read(volume.path()).expect("read back");
    assert_eq!(on_disk.len(), HEADER_SIZE + VOLUME0_DATA_SIZE);
    assert_eq!(&on_disk[..expected.len()], expected.as_slice());
    let mode = fs::metadata(volume.path()).expect("stat").mode();
    assert_eq!(mode & 0o777, 0o600);

    // A second create maps the existing volume instead of rewriting it.
    let file = fs::OpenOptions::new()
        .write(true)
        .open(volume.path())
        .expect("open");
    std::os::unix::fs::FileExt::write_at(&file, &[0x20], OFFSET_CURSOR as u64).expect("modify");
    assert_eq!(
        volume.bytes()[OFFSET_CURSOR],
        0x20,
        "shared mapping sees the write"
    );
    let again = Volume0::create(&cleanup.basename, &cleanup.dir).expect("reopen");
    assert_eq!(again.bytes()[OFFSET_CURSOR], 0x20);

    // The reader sees the single free block at offset 0.
    let reader = ShmReader::new(&cleanup.basename, &cleanup.dir);
    let data = reader.resolve(0).expect("resolve");
    assert_eq!(data.len(), VOLUME0_DATA_SIZE);
    assert_eq!(&data[..4], &BLOCK_MAGIC.to_le_bytes());

    drop(volume);
    drop(again);
    assert_eq!(
        unlink_all(&cleanup.basename, &cleanup.dir).expect("unlink"),
        1
    );
    assert!(!Path::new(SHM_DIR).join(&name).exists());
}

#[test]
fn volume0_file_fallback() {
    let cleanup = Cleanup::new();
    let volume = Volume0::create_with(&cleanup.basename, &cleanup.dir, false).expect("create");
    let path = cleanup.dir.join(format!("{}_0", cleanup.basename));
    assert!(volume.is_file_backed());
    assert_eq!(volume.path(), path);
    assert_eq!(volume.name(), path.to_str().expect("utf-8"));
    let expected = volume_header(volume.name(), 0, VOLUME0_DATA_SIZE);
    assert_eq!(
        &fs::read(&path).expect("read")[..expected.len()],
        expected.as_slice()
    );
    assert!(!Path::new(SHM_DIR)
        .join(format!("{}_0", cleanup.basename))
        .exists());

    // The reader falls back to the directory too.
    let reader = ShmReader::new(&cleanup.basename, &cleanup.dir);
    assert_eq!(
        reader.resolve(relptr(0, 8)).expect("resolve").len(),
        VOLUME0_DATA_SIZE - 8
    );
}

#[test]
fn volume0_rejects_bad_basenames() {
    let dir = Path::new("/nonexistent");
    for basename in ["", "a/b", "..", &"m".repeat(122)] {
        let err = Volume0::create(basename, dir).expect_err(basename);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{basename:?}");
    }
}

#[test]
fn reader_resolves_reference_snapshot() {
    // `bigText` 70000: the pool answered with relptr 0x06dd000000000010
    // into volume 1757, which holds the string header (length, relptr to
    // the bytes). Only the fallback directory has the file.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/wire/shm/bigText");
    let reader = ShmReader::new("morloc-14877-e8d392d64dfa1a2f", &dir);
    let header = reader
        .resolve(0x06dd_0000_0000_0010)
        .expect("string header");
    assert_eq!(header.len(), 131_070 - 0x10);
    assert_eq!(read_u64(header, 0), 70_000);
    let text_ptr = read_u64(header, 8) as i64;
    assert_eq!(text_ptr, 0x06dd_0000_0000_0020);
    let text = reader.resolve(text_ptr).expect("string bytes");
    assert!(text[..70_000].iter().all(|&byte| byte == b'x'));
}

#[test]
fn reader_errors() {
    let cleanup = Cleanup::new();
    let dir = &cleanup.dir;
    let base = &cleanup.basename;
    let mut data = Vec::new();
    data.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    write_volume(&dir.join(format!("{base}_3")), 3, 64, 64, &data);
    // volume_size larger than the file.
    write_volume(&dir.join(format!("{base}_4")), 4, 100, 64, &[]);
    // Header index disagrees with the name.
    write_volume(&dir.join(format!("{base}_5")), 9, 64, 64, &[]);
    // Bad magic.
    fs::write(dir.join(format!("{base}_6")), vec![0u8; 300]).expect("write");
    // Shorter than a header.
    fs::write(dir.join(format!("{base}_7")), vec![0u8; 100]).expect("write");
    // A directory instead of a file.
    fs::create_dir(dir.join(format!("{base}_8"))).expect("mkdir");

    let reader = ShmReader::new(base, dir);
    let bytes = reader.resolve(relptr(3, 2)).expect("in range");
    assert_eq!(bytes.len(), 62);
    assert_eq!(&bytes[..3], &[3, 4, 5]);
    assert_eq!(reader.resolve(relptr(3, 63)).expect("last byte").len(), 1);

    #[track_caller]
    fn check(reader: &ShmReader, relptr: i64, expected: &str) {
        let err = reader.resolve(relptr).expect_err("must fail");
        let text = err.to_string();
        assert!(text.contains(expected), "{text:?} lacks {expected:?}");
    }
    check(
        &reader,
        -1,
        "relptr 0xffffffffffffffff is null (bit 63 set)",
    );
    check(&reader, i64::MIN | 5, "is null");
    check(
        &reader,
        relptr(3, 64),
        "offset 64 is outside the 64-byte data region of shared-memory volume 3",
    );
    check(&reader, relptr(3, RELPTR_OFFSET_MASK as u64), "outside");
    check(
        &reader,
        relptr(4, 0),
        "header claims 100 data bytes but the file holds only 64",
    );
    check(&reader, relptr(5, 0), "header says volume index 9");
    check(&reader, relptr(6, 0), "bad magic 0x00000000");
    check(&reader, relptr(7, 0), "less than the 168-byte header");
    check(&reader, relptr(8, 0), "not a regular file");
    check(
        &reader,
        relptr(2, 0),
        &format!("shared-memory volume {base}_2 not found in /dev/shm or"),
    );
    assert!(matches!(
        reader.resolve(relptr(2, 0)),
        Err(ShmError::VolumeMissing { .. })
    ));
}

#[test]
fn reader_remaps_a_replaced_volume() {
    let cleanup = Cleanup::new();
    let path = cleanup.dir.join(format!("{}_1", cleanup.basename));
    write_volume(&path, 1, 32, 32, &[7]);
    let mut reader = ShmReader::new(&cleanup.basename, &cleanup.dir);
    let old = reader.resolve(relptr(1, 0)).expect("old volume");
    assert_eq!(old.len(), 32);

    // The pool unlinks volume 1 and creates a bigger one at the same index.
    fs::remove_file(&path).expect("unlink");
    write_volume(&path, 1, 128, 128, &[9]);
    // Offsets inside the cached size still see the cached (old) mapping...
    assert_eq!(reader.resolve(relptr(1, 0)).expect("cached")[0], 7);
    // ...one beyond it triggers a re-open and finds the new volume, while
    // the old slice stays valid.
    assert_eq!(reader.resolve(relptr(1, 100)).expect("remapped").len(), 28);
    assert_eq!(old[0], 7);
    assert_eq!(reader.resolve(relptr(1, 0)).expect("new")[0], 9);

    // Past the end of an unchanged volume is still an error.
    let err = reader.resolve(relptr(1, 128)).expect_err("out of range");
    assert!(
        matches!(err, ShmError::OutOfRange { data_size: 128, .. }),
        "{err}"
    );

    reader.clear();
    fs::remove_file(&path).expect("unlink");
    assert!(matches!(
        reader.resolve(relptr(1, 0)),
        Err(ShmError::VolumeMissing { .. })
    ));
}

#[test]
fn released_pages_still_read_the_same() {
    let cleanup = Cleanup::new();
    let path = cleanup.dir.join(format!("{}_2", cleanup.basename));
    let size = 5 * 4096;
    let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    write_volume(&path, 2, size, size, &data);
    let reader = ShmReader::new(&cleanup.basename, &cleanup.dir);
    let region = reader.resolve(relptr(2, 0)).expect("volume");
    assert_eq!(region, &data[..]);
    // Whole pages inside the range go; the data reads back unchanged, and
    // ranges that are out of bounds or too small are ignored.
    reader.release(relptr(2, 100), 3 * 4096);
    reader.release(relptr(2, 10), 20);
    reader.release(relptr(2, 1 << 40), 4096);
    assert_eq!(region, &data[..]);
    fs::remove_file(&path).expect("unlink");
}

#[test]
fn unlink_all_removes_only_our_names() {
    let cleanup = Cleanup::new();
    let base = &cleanup.basename;
    let decoy = format!("{base}x_0");
    let ours = [
        format!("{base}_0"),
        format!("{base}_1757"),
        format!("{base}.registry"),
        format!("{base}-gen1_0"),
        format!("{base}-gen2.registry"),
    ];
    for dir in [Path::new(SHM_DIR), cleanup.dir.as_path()] {
        for name in ours.iter().chain([&decoy]) {
            fs::write(dir.join(name), b"").expect("create");
        }
    }
    fs::create_dir(cleanup.dir.join(format!("{base}_dir"))).expect("mkdir");

    let removed = unlink_all(base, &cleanup.dir);
    let decoy_in_shm = Path::new(SHM_DIR).join(&decoy);
    let decoy_kept = decoy_in_shm.exists() && cleanup.dir.join(&decoy).exists();
    let _ = fs::remove_file(&decoy_in_shm);
    assert_eq!(removed.expect("unlink"), 2 * ours.len());
    assert!(decoy_kept, "decoy removed");
    for dir in [Path::new(SHM_DIR), cleanup.dir.as_path()] {
        for name in &ours {
            assert!(!dir.join(name).exists(), "{name} left in {}", dir.display());
        }
    }
    assert!(cleanup.dir.join(format!("{base}_dir")).is_dir());
    assert_eq!(
        unlink_all(base, Path::new("/nonexistent")).expect("nothing left"),
        0
    );
    assert!(unlink_all("", &cleanup.dir).is_err());
}

#[test]
fn sweep_removes_only_dead_owners() {
    let cleanup = Cleanup::new();
    let dir = &cleanup.dir;
    // i32::MAX is above any pid_max, so it is never alive.
    let dead = format!("morloc-{}-0000000000000000_0", i32::MAX);
    let alive = format!("{}_0", new_basename());
    let keep = [
        alive.clone(),
        "morloc-abc_0".to_owned(),
        "morloc-0-00_0".to_owned(),
        "morloc-99999999999999999999-00_0".to_owned(),
        format!("morloc-{}_0", i32::MAX),
        "other-1-00_0".to_owned(),
    ];
    for name in keep.iter().chain([&dead]) {
        fs::write(dir.join(name), b"").expect("create");
    }
    assert_eq!(sweep_stale_in(dir), 1);
    assert!(!dir.join(&dead).exists());
    for name in &keep {
        assert!(dir.join(name).exists(), "{name} was removed");
    }
    assert_eq!(sweep_stale_in(Path::new("/nonexistent")), 0);
}

#[test]
fn owner_pid_parsing() {
    #[track_caller]
    fn check(name: &str, expected: Option<i32>) {
        assert_eq!(owner_pid(name.as_bytes()), expected, "{name}");
    }
    check("morloc-4242-0f1e2d3c4b5a6978_0", Some(4242));
    check("morloc-4242-0f1e2d3c4b5a6978.registry", Some(4242));
    check("morloc-4242-0f1e2d3c4b5a6978-gen1_3", Some(4242));
    check("morloc-4242", None);
    check("morloc-4242_0", None);
    check("morloc--1-x", None);
    check("morloc-0-x", None);
    check("morloc-2147483648-x", None);
    check("morloc-2147483647-x", Some(i32::MAX));
    check("morlocs-1-x", None);
}
