//! File access for the `@save` / `@load` intrinsics of pure commands, on
//! the reactor thread: a pure command is evaluated in one go (bounded by its
//! budget, `format::eval::Limits`), and a file it loads is sized first and
//! refused unread when over what the budget still takes.

use std::io;

use super::result_file::{Sliced, Slices};

/// File access for the `@save` / `@load` intrinsics of pure commands.
pub(super) struct FsHost;

impl crate::format::eval::Host for FsHost {
    fn read_file(&mut self, path: &str, limit: u64) -> io::Result<Vec<u8>> {
        // Sized up front: a file over the budget is refused unread.
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        if size > limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        // In one step (the evaluation runs in one go anyway), through the
        // result files' reader, which stops one byte past the limit.
        match Slices::new(file, size, limit).step(usize::MAX) {
            Sliced::Done(bytes) => Ok(bytes),
            Sliced::Failed(e) => Err(io::Error::other(e)),
            Sliced::More => Err(io::ErrorKind::FileTooLarge.into()),
        }
    }

    fn write_file_atomic(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let target = std::path::Path::new(path);
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, target).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::eval::Host;

    #[test]
    fn a_file_is_read_within_the_limit_and_refused_over_it() {
        let dir = std::env::temp_dir().join(format!("fs-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.txt");
        let path = path.to_str().unwrap();
        FsHost.write_file_atomic(path, &[b'y'; 100]).unwrap();
        assert_eq!(FsHost.read_file(path, 100).unwrap(), [b'y'; 100]);
        let over = FsHost.read_file(path, 99).unwrap_err();
        assert_eq!(over.kind(), io::ErrorKind::FileTooLarge);
        std::fs::remove_file(path).unwrap();
        let missing = FsHost.read_file(path, 100).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
