//! Reloading a program when it is rebuilt or its tools file changes.
//!
//! Each served manifest and its tools file (present or not) are watched by
//! polling their metadata (modification time, size, inode) every
//! [`CHECK_EVERY`]; a change that has held still for
//! one check (so a file still being written is not read half-way) loads the
//! new manifest. If it loads, the new program is served at once: new calls
//! reach its fresh pools, calls already running finish on the old pools,
//! which are stopped when the last of them is done; subscribers hear that the
//! tool list changed (modern `subscriptions/listen` requests, and the legacy
//! stdio session as `notifications/tools/list_changed`). If it does not load,
//! the old program keeps serving and stderr says why.

use crate::edge::log;
use crate::protocol::log::Level;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use super::pools::Runtime;
use super::{Client, Reactor};
use crate::edge::manifest_file;
use crate::protocol::jsonrpc;
use crate::protocol::mcp::{Catalog, Program};

/// How often a manifest's metadata is looked at.
const CHECK_EVERY: Duration = Duration::from_millis(200);

/// What identifies one version of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

/// One version of a program: its manifest's and its tools file's stamps
/// (`None`: the file is missing).
type Stamp = (Option<FileStamp>, Option<FileStamp>);

fn file_stamp(path: &PathBuf) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        inode: meta.ino(),
    })
}

fn stamp(w: &Watch) -> Stamp {
    (file_stamp(&w.path), file_stamp(&w.tools_file))
}

/// One watched program: the live program at `slot` of `Catalog::live`.
pub(super) struct Watch {
    slot: usize,
    path: PathBuf,
    tools_file: PathBuf,
    /// The version being served (or last tried).
    served: Stamp,
    /// The version seen at the previous check, if it differed from the
    /// served one.
    seen: Option<Stamp>,
}

/// The watched programs (the owner of the watches), when they are looked
/// at next, and the programs replaced by a reload whose pools are stopped
/// once no call runs on them.
pub(super) struct Watches {
    list: Vec<Watch>,
    /// The next look at every watch (they are looked at together).
    next_check: Instant,
    /// Replaced programs not retired yet, by catalog index.
    retiring: Vec<usize>,
}

impl Watches {
    /// Watches for every live program of the catalog.
    pub(super) fn new(catalog: &Catalog) -> Watches {
        let now = Instant::now();
        let list: Vec<Watch> = catalog
            .live()
            .iter()
            .enumerate()
            .map(|(slot, &index)| {
                let loaded = &catalog.programs[index].loaded;
                let mut watch = Watch {
                    slot,
                    path: loaded.path.clone(),
                    tools_file: loaded.tools_file.clone(),
                    served: (None, None),
                    seen: None,
                };
                watch.served = stamp(&watch);
                watch
            })
            .collect();
        // Programs the catalog does not serve from the start.
        let retiring = (0..catalog.programs.len())
            .filter(|&index| !catalog.is_live(index))
            .collect();
        Watches {
            list,
            next_check: now + CHECK_EVERY,
            retiring,
        }
    }

    /// Program `index` (of the catalog) was replaced: its pools stop once
    /// no call runs on it.
    fn retire_later(&mut self, index: usize) {
        self.retiring.push(index);
    }

    /// The replaced programs not retired yet.
    fn take_retiring(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.retiring)
    }

    /// When the next look is due (one deadline for every watch).
    pub(super) fn next_check(&self) -> Option<Instant> {
        (!self.list.is_empty()).then_some(self.next_check)
    }

    /// Once the look is due at `now` (not before: a turn does not visit the
    /// watches), looks at every watch: the live slots whose files changed
    /// and then held still, each with whether its manifest changed (else
    /// only its tools file).
    fn due(&mut self, now: Instant) -> Vec<(usize, bool)> {
        let mut due = Vec::new();
        if now < self.next_check {
            return due;
        }
        self.next_check = now + CHECK_EVERY;
        for w in &mut self.list {
            let current = stamp(w);
            if current == w.served {
                w.seen = None;
                continue;
            }
            if w.seen.as_ref() == Some(&current) {
                // Unchanged since the last look: the write is complete.
                let manifest_changed = current.0 != w.served.0;
                w.served = current;
                w.seen = None;
                due.push((w.slot, manifest_changed));
            } else {
                w.seen = Some(current);
            }
        }
        due
    }
}

impl Reactor {
    /// Reloads the programs whose files changed, and stops the pools of
    /// retired programs once no call runs on them.
    pub(super) fn reload_timers(&mut self, now: Instant) {
        for (slot, manifest_changed) in self.watches.due(now) {
            self.reload(slot, manifest_changed);
        }
        // Only the programs replaced and not retired yet (usually none).
        for index in self.watches.take_retiring() {
            if index >= self.pools.len() || self.pools.retired(index) {
                continue;
            }
            if self.calls.runs(index) {
                self.watches.retire_later(index);
                continue;
            }
            for pool in self.pools.procs(index).collect::<Vec<_>>() {
                self.with_pools(&mut |p, cx| p.stop(cx, index, pool));
            }
            self.pools.retire(index);
            // Nothing refers to its commands any more: a server rebuilt a
            // thousand times keeps only what it serves.
            self.catalog.release(index);
        }
    }

    /// Loads the manifest of live slot `slot` again and, if it loads, serves
    /// it; `manifest_changed` is false when only its tools file changed.
    fn reload(&mut self, slot: usize, manifest_changed: bool) {
        let old = self.catalog.live()[slot];
        let served = &self.catalog.programs[old].loaded;
        let manifest_path = served.path.clone();
        let tools_file = served.tools_file.clone();
        // The file named in what is logged: the one that changed.
        let path = if manifest_changed {
            manifest_path.clone()
        } else {
            tools_file.clone()
        };
        let given = served.tools_file_given.then(|| served.tools_file.clone());
        let mut warnings = Vec::new();
        let loaded = match manifest_file::load(&manifest_path, &mut warnings) {
            Ok(mut l) => {
                if let Some(tools_file) = &given {
                    manifest_file::give_tools_file(&mut l, tools_file);
                }
                l
            }
            Err(e) => {
                return log::warn(&format!(
                    "{} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                ))
            }
        };
        for w in warnings {
            log::labelled(Level::Warn, &w);
        }
        let surface = match manifest_file::surface(&loaded) {
            Ok(surface) => surface,
            Err(e) => {
                return log::warn(&format!(
                    "{} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                ))
            }
        };
        for note in &surface.notes {
            log::labelled(Level::Warn, note);
        }
        let program = match Program::new(loaded, surface) {
            Ok(p) => p,
            Err(e) => {
                return log::warn(&format!(
                    "{} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                ))
            }
        };
        let unbound = self
            .http
            .as_ref()
            .and_then(|h| h.oauth_unbound(&self.catalog, old, &program));
        if let Some(why) = unbound {
            return log::warn(&format!(
                "{} changed but cannot be served ({why}); still serving the previous build",
                path.display()
            ));
        }
        let runtime = match Runtime::new(&program) {
            Ok(rt) => rt,
            Err(e) => {
                return log::warn(&format!("{} changed but its pools' run directory cannot be made ({e}); still serving the previous build",
                    path.display()))
            }
        };
        let index = match self.catalog.replace(slot, program) {
            Ok(i) => i,
            Err(e) => {
                let mut runtime = runtime;
                runtime.remove_files();
                return log::warn(&format!(
                    "{} changed but cannot be served ({e}); still serving the previous build",
                    path.display()
                ));
            }
        };
        self.pools.push(runtime);
        self.watches.retire_later(old);
        let tools = self.catalog.programs[index].surface.tools.len();
        let what = if manifest_changed {
            format!("{} was rebuilt", manifest_path.display())
        } else {
            format!("the tools file {} was reloaded", tools_file.display())
        };
        log::warn(&format!("{what}; now serving {tools} tools (calls already running finish on the previous pools)"));
        if !self.options.lazy_pools {
            self.with_pools(&mut |p, cx| p.start_all(cx, index));
        }
        self.notify_tools_changed();
        let legacy_stdio = self.stdio.as_ref().is_some_and(|s| s.session().initialized);
        if legacy_stdio {
            let note = jsonrpc::notification(
                "notifications/tools/list_changed",
                serde_json::Value::Object(serde_json::Map::new()),
            );
            self.deliver(&Client::Stdio, &note, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_looks_at_the_watches_only_when_their_look_is_due() {
        let dir = std::env::temp_dir().join(format!("morloc-mcp-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let path = dir.join("manifest.json");
        std::fs::write(&path, "{}").expect("manifest");
        // Both programs' manifests changed and held still since the last
        // look: they are reported when the look is due, never before (a
        // turn that visits every watch coming back fails this test).
        let watch = |slot| Watch {
            slot,
            path: path.clone(),
            tools_file: dir.join("absent.json"),
            served: (None, None),
            seen: Some((file_stamp(&path), None)),
        };
        let now = Instant::now();
        let mut watches = Watches {
            list: vec![watch(0), watch(1)],
            next_check: now + CHECK_EVERY,
            retiring: Vec::new(),
        };
        assert_eq!(watches.next_check(), Some(now + CHECK_EVERY));
        assert_eq!(watches.due(now), []);
        let at = now + CHECK_EVERY;
        assert_eq!(watches.due(at), [(0, true), (1, true)]);
        assert_eq!(watches.next_check(), Some(at + CHECK_EVERY));
        assert_eq!(watches.due(at), [], "looked at once per period");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
