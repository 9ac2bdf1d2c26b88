//! A FILE result (a pool wrote a large result to a msgpack file, as pools do
//! when shared memory is off) read a bounded slice per reactor turn.
//!
//! A regular file never reports "not ready", so the poll cannot pace its
//! reading: a whole read of a very large file would hold the thread. The
//! call waits in `CallStage::ReadingFile` instead, its slices taking turns
//! on the line of long work (`prepare`) with every other event served
//! between two of them; once the file is read it is decoded as before. The
//! server owns the file once it has the reply (pools never delete them):
//! it is removed when the read ends, however it ends (read, failed,
//! cancelled, timed out, its client gone).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Bytes of a result file read per turn: a few hundred microseconds from
/// the page cache.
pub(super) const FILE_SLICE: usize = 512 << 10;

/// What one [`Slices::step`] did.
#[derive(Debug, PartialEq)]
pub(super) enum Sliced {
    /// A slice was read; more may follow, in a later turn.
    More,
    /// The end of the file: every byte read.
    Done(Vec<u8>),
    /// The read failed, or the file is larger than allowed.
    Failed(String),
}

/// A reader's bytes collected a bounded slice at a time, up to a limit.
pub(super) struct Slices<R> {
    source: R,
    data: Vec<u8>,
    limit: u64,
    /// Slices read so far.
    steps: usize,
}

impl<R: Read> Slices<R> {
    /// Reads `source` (about `size` bytes, reserved up to `limit`) to its
    /// end, refusing more than `limit` bytes.
    pub(super) fn new(source: R, size: u64, limit: u64) -> Slices<R> {
        let reserve = size.min(limit).saturating_add(1);
        Slices {
            source,
            data: Vec::with_capacity(usize::try_from(reserve).unwrap_or(0)),
            limit,
            steps: 0,
        }
    }

    /// Reads at most `slice` more bytes (short reads are continued, an
    /// interrupted read retried): the end, more to come, or a failure.
    pub(super) fn step(&mut self, slice: usize) -> Sliced {
        self.steps += 1;
        let before = self.data.len();
        // One byte past the limit tells a file over it from one at it.
        let room = self.limit.saturating_add(1).saturating_sub(before as u64);
        let want = room.min(slice as u64);
        let read = (&mut self.source).take(want).read_to_end(&mut self.data);
        if self.data.len() as u64 > self.limit {
            return Sliced::Failed(format!("larger than {} bytes", self.limit));
        }
        match read {
            Ok(n) if (n as u64) < want => Sliced::Done(std::mem::take(&mut self.data)),
            Ok(_) => Sliced::More,
            // Not for a regular file; any other reader says so when it
            // has nothing yet.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Sliced::More,
            Err(e) => Sliced::Failed(e.to_string()),
        }
    }

    /// Slices read so far.
    pub(super) fn steps(&self) -> usize {
        self.steps
    }
}

/// A pool's result file being read; removed when dropped.
pub(super) struct ResultFile {
    path: PathBuf,
    pub(super) slices: Slices<File>,
}

impl ResultFile {
    /// Opens the result file at `path`, refusing one over `limit` bytes (it
    /// is removed either way).
    pub(super) fn open(path: &Path, limit: u64) -> Result<ResultFile, String> {
        let said = |e: &dyn std::fmt::Display| {
            format!("cannot read the result file {}: {e}", path.display())
        };
        let refused = |message: String| {
            let _ = std::fs::remove_file(path);
            Err(message)
        };
        let (size, source) = match File::open(path).and_then(|f| Ok((f.metadata()?.len(), f))) {
            Ok(opened) => opened,
            Err(e) => return refused(said(&e)),
        };
        if size > limit {
            return refused(said(&format!("larger than {limit} bytes")));
        }
        Ok(ResultFile {
            path: path.to_path_buf(),
            slices: Slices::new(source, size, limit),
        })
    }

    /// The file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// One slice: the end (the file's bytes), more to read, or the error
    /// the call ends with.
    pub(super) fn step(&mut self) -> Sliced {
        match self.slices.step(FILE_SLICE) {
            Sliced::Failed(e) => Sliced::Failed(format!(
                "cannot read the result file {}: {e}",
                self.path.display()
            )),
            other => other,
        }
    }
}

impl Drop for ResultFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader of `bytes` that hands out at most `chunk` bytes per read,
    /// says `Interrupted` before every other read, and fails with
    /// `fail_at` bytes read, if set.
    struct Fake {
        bytes: Vec<u8>,
        at: usize,
        chunk: usize,
        fail_at: Option<usize>,
        interrupt: bool,
        reads: usize,
    }

    impl Fake {
        fn new(len: usize, chunk: usize) -> Fake {
            let bytes = (0..len).map(|i| (i % 251) as u8).collect();
            Fake {
                bytes,
                at: 0,
                chunk,
                fail_at: None,
                interrupt: false,
                reads: 0,
            }
        }
    }

    impl Read for Fake {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            if self.interrupt && self.reads % 2 == 1 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            if self.fail_at.is_some_and(|f| self.at >= f) {
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.chunk).min(self.bytes.len() - self.at);
            buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn run(slices: &mut Slices<Fake>, slice: usize) -> (Vec<Sliced>, Vec<u8>) {
        let mut seen = Vec::new();
        loop {
            match slices.step(slice) {
                Sliced::Done(bytes) => return (seen, bytes),
                other => {
                    let failed = matches!(other, Sliced::Failed(_));
                    seen.push(other);
                    if failed {
                        return (seen, Vec::new());
                    }
                }
            }
        }
    }

    #[test]
    fn a_source_is_read_in_bounded_slices_to_its_end() {
        let fake = Fake::new(10, usize::MAX);
        let expected = fake.bytes.clone();
        let mut slices = Slices::new(fake, 10, 100);
        assert_eq!(slices.step(4), Sliced::More);
        assert_eq!(slices.data.len(), 4);
        assert_eq!(slices.step(4), Sliced::More);
        assert_eq!(slices.data.len(), 8);
        // The last slice is short: the end.
        assert_eq!(slices.step(4), Sliced::Done(expected));
        assert_eq!(slices.steps(), 3);
    }

    #[test]
    fn a_source_ending_on_a_slice_boundary_ends_at_the_next_step() {
        let fake = Fake::new(8, usize::MAX);
        let expected = fake.bytes.clone();
        let mut slices = Slices::new(fake, 8, 100);
        let (seen, bytes) = run(&mut slices, 4);
        assert_eq!(seen, [Sliced::More, Sliced::More]);
        assert_eq!(bytes, expected);
        let mut empty = Slices::new(Fake::new(0, 1), 0, 100);
        assert_eq!(empty.step(4), Sliced::Done(Vec::new()));
    }

    #[test]
    fn short_and_interrupted_reads_are_continued_within_a_slice() {
        let mut fake = Fake::new(1000, 3);
        fake.interrupt = true;
        let expected = fake.bytes.clone();
        let mut slices = Slices::new(fake, 1000, 1000);
        assert_eq!(slices.step(100), Sliced::More);
        // A whole slice, from reads of 3 bytes with an interruption before
        // each.
        assert_eq!(slices.data.len(), 100);
        assert!(slices.source.reads >= 2 * 34, "{}", slices.source.reads);
        let (seen, bytes) = run(&mut slices, 100);
        assert_eq!(seen.len(), 9);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn a_failing_read_ends_with_its_error() {
        let mut fake = Fake::new(100, 7);
        fake.fail_at = Some(30);
        let mut slices = Slices::new(fake, 100, 1000);
        assert_eq!(slices.step(20), Sliced::More);
        assert_eq!(slices.step(20), Sliced::Failed("disk on fire".to_string()));
    }

    #[test]
    fn a_source_over_the_limit_is_refused_and_one_at_it_is_read() {
        // The size said up front may be wrong (a file still growing).
        let mut over = Slices::new(Fake::new(10, usize::MAX), 0, 9);
        let (seen, _) = run(&mut over, 4);
        assert_eq!(
            seen.last(),
            Some(&Sliced::Failed("larger than 9 bytes".to_string()))
        );
        let fake = Fake::new(10, usize::MAX);
        let expected = fake.bytes.clone();
        let mut at = Slices::new(fake, 0, 10);
        assert_eq!(run(&mut at, 4).1, expected);
    }

    #[test]
    fn a_result_file_is_read_and_removed_however_its_read_ends() {
        let dir = std::env::temp_dir().join(format!("result-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("read.mpk");
        let bytes: Vec<u8> = (0..FILE_SLICE * 2 + 5).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let mut file = ResultFile::open(&path, u64::MAX).unwrap();
        assert_eq!(file.path(), path);
        assert_eq!(file.step(), Sliced::More);
        assert_eq!(file.step(), Sliced::More);
        assert_eq!(file.step(), Sliced::Done(bytes.clone()));
        drop(file);
        assert!(!path.exists());
        // Dropped half-way (the call was cancelled): removed too.
        std::fs::write(&path, &bytes).unwrap();
        let mut file = ResultFile::open(&path, u64::MAX).unwrap();
        assert_eq!(file.step(), Sliced::More);
        drop(file);
        assert!(!path.exists());
        // Over the limit: refused, and removed.
        std::fs::write(&path, &bytes).unwrap();
        let refused = ResultFile::open(&path, 100).err().unwrap();
        assert!(refused.contains("larger than 100 bytes"), "{refused}");
        assert!(refused.contains("read.mpk"), "{refused}");
        assert!(!path.exists());
        // Missing: its error names it.
        let missing = ResultFile::open(&path, u64::MAX).err().unwrap();
        assert!(
            missing.starts_with("cannot read the result file "),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
