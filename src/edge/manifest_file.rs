//! Reading a program's files from disk: its `manifest.json`, and the tools
//! file that curates its tools. The one place they are opened; parsing them
//! is `format::manifest` and `protocol::tools::curate`, which do no I/O.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::format::manifest::{LoadError, LoadErrorKind, Loaded, Manifest};
use crate::protocol::tools::{self, curate, Surface};

/// Reads and parses the manifest at `path`, and finds where it lives (the
/// canonical path, and the directory its pool programs are relative to).
/// The tools file is the one beside the manifest until the caller names
/// another ([`give_tools_file`]).
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
        tools_file: dir.join(curate::BESIDE_MANIFEST),
        tools_file_given: false,
        dir,
    })
}

/// Uses the tools file `path` (`--tools-file`) instead of the one beside
/// the manifest; it must then exist.
pub fn give_tools_file(loaded: &mut Loaded, path: &Path) {
    loaded.tools_file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    loaded.tools_file_given = true;
}

/// The largest tools file read: a curation of thousands of tools fits in
/// far less, and reading and parsing one happens on the reactor's thread
/// (at start and on every reload), so its size bounds that pause.
pub const MAX_TOOLS_FILE: u64 = 4 * 1024 * 1024;

/// The program's tool surface, curated by its tools file when there is one.
/// Notes on excluded commands are in `Surface::notes`.
pub fn surface(loaded: &Loaded) -> Result<Surface, String> {
    let mut surface = tools::build(&loaded.manifest);
    let path = &loaded.tools_file;
    let text = match read_capped(path, MAX_TOOLS_FILE) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !loaded.tools_file_given => {
            return Ok(surface)
        }
        Err(e) => return Err(format!("cannot read tools file '{}': {e}", path.display())),
    };
    let invalid = |e: curate::CurateError| format!("invalid tools file '{}': {e}", path.display());
    let curation = curate::parse(&text).map_err(invalid)?;
    curate::apply(&mut surface, &loaded.manifest, &curation).map_err(invalid)?;
    Ok(surface)
}

/// The text of the file at `path`, refused without reading it when it is
/// larger than `cap` bytes (and, if it grows while read, once past them).
fn read_capped(path: &Path, cap: u64) -> io::Result<String> {
    let too_big = |len: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is {len} bytes, more than the cap of {cap} bytes (4 MiB)"),
        )
    };
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > cap {
        return Err(too_big(len));
    }
    let mut text = String::with_capacity(len as usize);
    file.take(cap + 1).read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(too_big(text.len() as u64));
    }
    Ok(text)
}
