//! Reading a `manifest.json` from disk: the one place the manifest's file is
//! opened (parsing it is `format::manifest`, which does no I/O).

use std::path::{Path, PathBuf};

use crate::format::manifest::{LoadError, LoadErrorKind, Loaded, Manifest};

/// Reads and parses the manifest at `path`, and finds where it lives (the
/// canonical path, and the directory its pool programs are relative to).
pub fn load(path: &Path, warnings: &mut Vec<String>) -> Result<Loaded, LoadError> {
    let fail = |kind| LoadError {
        path: path.to_path_buf(),
        kind,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(LoadErrorKind::Read(e)))?;
    let manifest =
        Manifest::from_json(&text, warnings).map_err(|e| fail(LoadErrorKind::Parse(e)))?;
    let canonical = std::fs::canonicalize(path).map_err(|e| fail(LoadErrorKind::Read(e)))?;
    let dir = canonical
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    Ok(Loaded {
        manifest,
        path: canonical,
        dir,
    })
}
