//! Reloading a program when it is rebuilt.
//!
//! Each served manifest is watched by polling its metadata (modification
//! time, size, inode) every [`CHECK_EVERY`]; a change that has held still for
//! one check (so a file still being written is not read half-way) loads the
//! new manifest. If it loads, the new program is served at once: new calls
//! reach its fresh pools, calls already running finish on the old pools,
//! which are stopped when the last of them is done; subscribers hear that the
//! tool list changed (modern `subscriptions/listen` requests, and the legacy
//! stdio session as `notifications/tools/list_changed`). If it does not load,
//! the old program keeps serving and stderr says why.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use super::pools::Runtime;
use super::{Client, Reactor};
use crate::format::manifest;
use crate::protocol::jsonrpc;
use crate::protocol::mcp::{Catalog, Program};
use crate::protocol::tools;

/// How often a manifest's metadata is looked at.
const CHECK_EVERY: Duration = Duration::from_millis(200);

/// What identifies one version of a manifest file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &PathBuf) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        inode: meta.ino(),
    })
}

/// One watched manifest: the live program at `slot` of `Catalog::live`.
pub(super) struct Watch {
    slot: usize,
    path: PathBuf,
    /// The version being served (or last tried).
    served: Option<Stamp>,
    /// The version seen at the previous check, if it differed from the
    /// served one (`Some(None)`: the file was missing then).
    seen: Option<Option<Stamp>>,
    next_check: Instant,
}

/// Watches for every live program of the catalog.
pub(super) fn watches(catalog: &Catalog) -> Vec<Watch> {
    let now = Instant::now();
    catalog
        .live()
        .iter()
        .enumerate()
        .map(|(slot, &index)| {
            let path = catalog.programs[index].loaded.path.clone();
            Watch {
                slot,
                served: stamp(&path),
                path,
                seen: None,
                next_check: now + CHECK_EVERY,
            }
        })
        .collect()
}

impl Reactor {
    pub(super) fn next_reload_check(&self) -> Option<Instant> {
        self.watches.iter().map(|w| w.next_check).min()
    }

    pub(super) fn reload_timers(&mut self, now: Instant) {
        let mut due = Vec::new();
        for w in &mut self.watches {
            if now < w.next_check {
                continue;
            }
            w.next_check = now + CHECK_EVERY;
            let current = stamp(&w.path);
            if current == w.served {
                w.seen = None;
                continue;
            }
            if w.seen.as_ref() == Some(&current) {
                // Unchanged since the last look: the write is complete.
                w.served = current;
                w.seen = None;
                due.push(w.slot);
            } else {
                w.seen = Some(current);
            }
        }
        for slot in due {
            self.reload(slot);
        }
        self.retire_idle_programs();
    }

    /// Loads the manifest of live slot `slot` again and, if it loads, serves it.
    fn reload(&mut self, slot: usize) {
        let old = self.catalog.live()[slot];
        let path = self.catalog.programs[old].loaded.path.clone();
        let mut warnings = Vec::new();
        let loaded = match manifest::load(&path, &mut warnings) {
            Ok(l) => l,
            Err(e) => {
                return eprintln!(
                    "morloc-mcp: {} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                )
            }
        };
        for w in warnings {
            eprintln!("{w}");
        }
        let surface = tools::build(&loaded.manifest);
        for note in &surface.notes {
            eprintln!("{note}");
        }
        let program = match Program::new(loaded, surface) {
            Ok(p) => p,
            Err(e) => {
                return eprintln!(
                    "morloc-mcp: {} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                )
            }
        };
        let runtime = match Runtime::new(&program) {
            Ok(rt) => rt,
            Err(e) => {
                return eprintln!(
                    "morloc-mcp: {} changed but its pools' run directory cannot be made ({e}); still serving the previous build",
                    path.display()
                )
            }
        };
        let index = match self.catalog.replace(slot, program) {
            Ok(i) => i,
            Err(e) => {
                let mut runtime = runtime;
                runtime.remove_files();
                return eprintln!(
                    "morloc-mcp: {} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                );
            }
        };
        self.pools.push(runtime);
        let tools = self.catalog.programs[index].surface.tools.len();
        eprintln!(
            "morloc-mcp: {} was rebuilt; now serving its {tools} tools (calls already running finish on the previous pools)",
            path.display()
        );
        if !self.options.lazy_pools {
            self.start_all_pools(index);
        }
        self.notify_tools_changed();
        let legacy_stdio = self.stdio.as_ref().is_some_and(|s| s.session.initialized);
        if legacy_stdio {
            let note = jsonrpc::notification(
                "notifications/tools/list_changed",
                serde_json::Value::Object(serde_json::Map::new()),
            );
            self.deliver(&Client::Stdio, &note, false);
        }
    }

    /// Stops the pools of retired programs once no call runs on them.
    fn retire_idle_programs(&mut self) {
        for index in 0..self.pools.len() {
            if self.catalog.is_live(index) || self.pools.retired(index) {
                continue;
            }
            if self.calls.values().any(|c| c.program == index) {
                continue;
            }
            for pool in self.pools.procs(index).collect::<Vec<_>>() {
                self.stop_pool(index, pool);
            }
            self.pools.retire(index);
            // Nothing refers to its commands any more: a server rebuilt a
            // thousand times keeps only what it serves.
            self.catalog.release(index);
        }
    }
}
