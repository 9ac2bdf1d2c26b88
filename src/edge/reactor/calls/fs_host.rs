//! File access for the `@save` / `@load` intrinsics of pure commands, on
//! the reactor thread: a pure command is evaluated in one go (bounded by its
//! budget, `format::eval::Limits`), and a file it loads is sized first and
//! refused unread when over what the budget still takes.

use std::io::{self, Read};

/// File access for the `@save` / `@load` intrinsics of pure commands.
pub(super) struct FsHost;

impl crate::format::eval::Host for FsHost {
    fn read_file(&mut self, path: &str, limit: u64) -> io::Result<Vec<u8>> {
        // Sized up front: a file over the budget is refused unread.
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        let too_large = || Err(io::ErrorKind::FileTooLarge.into());
        if size > limit {
            return too_large();
        }
        let mut bytes = Vec::with_capacity(size as usize + 1);
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
        match bytes.len() as u64 > limit {
            true => too_large(),
            false => Ok(bytes),
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
