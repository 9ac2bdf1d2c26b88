//! How results travel back from the pools: the inline threshold and whether
//! larger results use shared memory or files, as libmorloc reads them; and
//! from that, a call's route ([`Route`]): where it may run and the lease it
//! needs.

use std::rc::Rc;

use super::index::BasePool;
use super::leases::LeaseMode;
use crate::protocol::mcp::Program;

/// The routing settings the pools run with (manifest first, then what they
/// inherit from our environment), as libmorloc reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::edge::reactor) struct Routing {
    /// Flat results of at most this many bytes come back inline.
    pub(in crate::edge::reactor) inline_threshold: u64,
    /// Larger results come back as shared-memory blocks (else as files).
    pub(in crate::edge::reactor) shm: bool,
}

/// Where a call of one command may run, and how it holds its process.
pub(in crate::edge::reactor) struct Route {
    /// The manifest pool of the command.
    pub(in crate::edge::reactor) pool: BasePool,
    /// That pool and the pools the command calls into, each once.
    pub(in crate::edge::reactor) bases: Rc<[BasePool]>,
    /// The command calls into other pools, which call back the primary:
    /// it runs on the primary only.
    pub(in crate::edge::reactor) primary_only: bool,
    /// The lease it needs (see `leases`).
    pub(in crate::edge::reactor) mode: LeaseMode,
}

/// libmorloc's default inline threshold.
const DEFAULT_INLINE_THRESHOLD: u64 = 64 * 1024;

impl Routing {
    pub(in crate::edge::reactor) fn new(
        manifest_inline: Option<i64>,
        manifest_no_shm: bool,
    ) -> Routing {
        let inherited = |name: &str| std::env::var(name).ok();
        Routing::from_settings(
            manifest_inline.map(|n| n.to_string()),
            manifest_no_shm,
            inherited("MORLOC_INLINE_SIZE"),
            inherited("MORLOC_NO_SHM"),
        )
    }

    /// The route of a call of `command` of `program`, whose pool runs one
    /// call at a time or not (`one_at_a_time`). Inline replies (and files)
    /// belong to the connection that carries them; only a shared-memory
    /// block can be freed under a call, so only a call whose result may come
    /// back in one holds its process alone. A pool that runs one call at a
    /// time cannot share a process anyway: its calls take one each, so a
    /// burst asks for replicas.
    pub(in crate::edge::reactor) fn route(
        self,
        program: &Program,
        command: usize,
        one_at_a_time: bool,
    ) -> Route {
        let needs = program.command(command);
        let pool = BasePool(needs.pool);
        let bases: Rc<[BasePool]> = match needs.needed_pools.is_empty() {
            true => Rc::new([pool]),
            false => {
                let mut bases = vec![pool];
                for &p in &needs.needed_pools {
                    if !bases.contains(&BasePool(p)) {
                        bases.push(BasePool(p));
                    }
                }
                bases.into()
            }
        };
        let always_inline = program
            .compiled(command)
            .always_inline(self.inline_threshold);
        let mode = if one_at_a_time || (self.shm && !always_inline) {
            LeaseMode::Exclusive
        } else {
            LeaseMode::Shared
        };
        Route {
            pool,
            primary_only: bases.len() > 1,
            bases,
            mode,
        }
    }

    /// `inline`: the value pools see for `MORLOC_INLINE_SIZE` (ours, from the
    /// manifest, replaces theirs); `no_shm`: the manifest's flag, else the
    /// inherited `MORLOC_NO_SHM`. Parsed as libmorloc does.
    fn from_settings(
        manifest_inline: Option<String>,
        manifest_no_shm: bool,
        env_inline: Option<String>,
        env_no_shm: Option<String>,
    ) -> Routing {
        let inline_threshold = manifest_inline
            .or(env_inline)
            .and_then(|text| text.parse::<i64>().ok())
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(DEFAULT_INLINE_THRESHOLD);
        let env_off = env_no_shm.is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        Routing {
            inline_threshold,
            shm: !(manifest_no_shm || env_off),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_follows_the_manifest_then_the_environment() {
        let routing =
            |inline: Option<&str>, no_shm: bool, env: Option<&str>, env_no: Option<&str>| {
                let r = Routing::from_settings(
                    inline.map(str::to_owned),
                    no_shm,
                    env.map(str::to_owned),
                    env_no.map(str::to_owned),
                );
                (r.inline_threshold, r.shm)
            };
        assert_eq!(routing(None, false, None, None), (65536, true));
        assert_eq!(routing(Some("0"), false, Some("99"), None), (0, true));
        assert_eq!(routing(None, false, Some("99"), Some(" On ")), (99, false));
        // Negative or unparsable values are ignored, as libmorloc does.
        assert_eq!(routing(Some("-5"), false, Some("99"), None), (65536, true));
        assert_eq!(routing(None, true, Some("x"), Some("0")), (65536, false));
    }
}
