//! Result leases: which calls may have a connection open to which pools.
//!
//! A pool worker frees the shared-memory block of its last result as soon as
//! it is handed its next connection, any connection (a ping, another call
//! from us, a call from another pool). So while a call whose result may come
//! back through shared memory (an RPTR reply) is in flight, nothing else may
//! connect to the pools it involves until its reply has been copied out.
//! Such a call holds an *exclusive* lease on its pool and on the pools its
//! command calls into; a call whose result is certain to come back inline (or
//! in a file) holds a *shared* one. Leases are taken in the order of the
//! queue (`queue`: round-robin across owners): a call that cannot have its
//! lease yet blocks the calls after it that need any of its pools, so an
//! exclusive call is not starved by a stream of shared ones.
//!
//! This module is the bookkeeping only, keyed by process ([`Proc`]): the
//! scheduler (`schedule`) decides who takes a lease, the reactor (`calls`)
//! takes it before connecting and gives it back when the call ends.

use super::index::Proc;

/// How a call uses the pools it involves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::edge::reactor) enum LeaseMode {
    /// The result is certain not to be a shared-memory block: any number of
    /// these may run together.
    Shared,
    /// The result may be a shared-memory block that the next connection to
    /// the pool frees: nothing else may connect until it has been read.
    Exclusive,
}

#[derive(Clone, Copy, Debug, Default)]
struct PoolLease {
    shared: usize,
    exclusive: bool,
}

/// The leases of one program's pools.
#[derive(Debug, Default)]
pub(in crate::edge::reactor) struct Leases {
    pools: Vec<PoolLease>,
}

impl Leases {
    pub(in crate::edge::reactor) fn new(n_pools: usize) -> Leases {
        Leases {
            pools: vec![PoolLease::default(); n_pools],
        }
    }

    /// Whether a call in `mode` on `pools` could take its lease now.
    pub(in crate::edge::reactor) fn available(&self, pools: &[Proc], mode: LeaseMode) -> bool {
        pools.iter().all(|&p| {
            let lease = self.pools[p.0];
            match mode {
                LeaseMode::Shared => !lease.exclusive,
                LeaseMode::Exclusive => !lease.exclusive && lease.shared == 0,
            }
        })
    }

    /// Takes the lease; [`Leases::available`] must have said yes.
    pub(in crate::edge::reactor) fn take(&mut self, pools: &[Proc], mode: LeaseMode) {
        for &p in pools {
            let lease = &mut self.pools[p.0];
            match mode {
                LeaseMode::Shared => lease.shared += 1,
                LeaseMode::Exclusive => lease.exclusive = true,
            }
        }
    }

    /// Gives back a lease taken with the same arguments.
    pub(in crate::edge::reactor) fn release(&mut self, pools: &[Proc], mode: LeaseMode) {
        for &p in pools {
            let lease = &mut self.pools[p.0];
            match mode {
                LeaseMode::Shared => lease.shared = lease.shared.saturating_sub(1),
                LeaseMode::Exclusive => lease.exclusive = false,
            }
        }
    }

    /// Makes room for pools added later (replicas), with no lease on them.
    pub(in crate::edge::reactor) fn grow(&mut self, n_pools: usize) {
        if self.pools.len() < n_pools {
            self.pools.resize(n_pools, PoolLease::default());
        }
    }

    /// How many calls hold a lease on `pool`.
    pub(in crate::edge::reactor) fn busy(&self, pool: Proc) -> usize {
        self.pools
            .get(pool.0)
            .map_or(0, |lease| lease.shared + usize::from(lease.exclusive))
    }

    /// Whether a call holds `pool` exclusively (then not even a readiness
    /// probe may connect to it).
    pub(in crate::edge::reactor) fn exclusive(&self, pool: Proc) -> bool {
        self.pools.get(pool.0).is_some_and(|lease| lease.exclusive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_excludes_everything_and_shared_only_exclusive() {
        let mut leases = Leases::new(3);
        let p = |i: &[usize]| i.iter().map(|&i| Proc(i)).collect::<Vec<_>>();
        let (a, b) = (&p(&[0, 1])[..], &p(&[1, 2])[..]);
        assert!(leases.available(a, LeaseMode::Shared));
        leases.take(a, LeaseMode::Shared);
        assert!(leases.available(b, LeaseMode::Shared));
        assert!(!leases.available(b, LeaseMode::Exclusive));
        assert!(leases.available(&[Proc(2)], LeaseMode::Exclusive));
        leases.take(&[Proc(2)], LeaseMode::Exclusive);
        assert!(leases.exclusive(Proc(2)) && !leases.exclusive(Proc(1)));
        assert!(!leases.available(b, LeaseMode::Shared));
        leases.release(a, LeaseMode::Shared);
        assert!(leases.available(&p(&[0, 1]), LeaseMode::Exclusive));
        assert!(!leases.available(b, LeaseMode::Exclusive));
        leases.release(&[Proc(2)], LeaseMode::Exclusive);
        assert!(leases.available(b, LeaseMode::Exclusive));
    }
}
