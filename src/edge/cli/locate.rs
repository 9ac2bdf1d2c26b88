//! Where a serve target's manifest is: the file itself, `manifest.json`
//! inside a build directory, or the path on a Morloc launcher script's exec
//! line.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::CliError;

/// How much of a target is read to recognise a launcher script.
const LAUNCHER_SNIFF_BYTES: u64 = 8192;

/// Finds the manifest a target names: the file itself, `manifest.json`
/// inside a build directory, or the path on a launcher script's exec line.
/// A target that cannot be opened is returned as is, so that loading it
/// reports the error.
pub fn locate_manifest(target: &Path) -> Result<PathBuf, CliError> {
    if target.is_dir() {
        let inside = target.join("manifest.json");
        if inside.is_file() {
            return Ok(inside);
        }
        return Err(CliError::Start(format!(
            "'{}' is a directory without a manifest.json",
            target.display()
        )));
    }
    let mut head = Vec::new();
    let Ok(file) = std::fs::File::open(target) else {
        return Ok(target.to_path_buf());
    };
    if file
        .take(LAUNCHER_SNIFF_BYTES)
        .read_to_end(&mut head)
        .is_err()
    {
        return Ok(target.to_path_buf());
    }
    match launcher_manifest(&head) {
        None => Ok(target.to_path_buf()),
        Some(Some(path)) => Ok(PathBuf::from(path)),
        Some(None) => Err(CliError::Start(format!(
            "'{}' looks like a morloc launcher but no manifest path was found on its exec line",
            target.display()
        ))),
    }
}

/// Reads a launcher script's head. `None`: not a launcher. `Some(None)`: a
/// launcher without a usable exec line. `Some(Some(path))`: its manifest.
pub fn launcher_manifest(head: &[u8]) -> Option<Option<String>> {
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // The sniffed prefix may end inside a multi-byte character.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    if !text.starts_with("#!") || !text.contains("morloc-nexus") {
        return None;
    }
    let line = text.lines().find(|line| {
        let line = line.trim_start();
        line.starts_with("exec morloc-nexus") || line.starts_with("morloc-nexus")
    });
    let quoted = line.and_then(|line| {
        let first = line.find('\'')?;
        let last = line.rfind('\'')?;
        (last > first).then(|| line[first + 1..last].replace("'\\''", "'"))
    });
    Some(quoted)
}
