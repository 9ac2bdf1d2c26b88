//! The scheduler: which waiting calls connect to which pool processes now.
//! Pure: it sees the fair queue (`queue`), the leases of one program's
//! processes (`pools::leases`) and which processes are ready, and decides;
//! the reactor (`calls::dispatch`) connects what it decided.
//!
//! Calls are taken in the queue's fair order (round-robin across owners),
//! each on the least busy ready process of its pool that it can lease (a
//! call that goes through other pools runs on the primary only, and needs
//! their primaries ready and leasable too). A call that must wait for its
//! lease holds up the calls after it that need any of its pools, so an
//! exclusive call is not starved by a stream of shared ones; calls left
//! waiting while every process of their pool is busy, or while none is
//! ready yet, count as demand for replicas.
//!
//! Only the head of each class (calls that need the same pools) is looked
//! at: the calls behind it have the same readiness and would be held up by
//! it, so the work is one step per call that goes plus one per class,
//! however many calls wait.

use std::hash::Hash;
use std::rc::Rc;

use super::pools::{BasePool, LeaseMode, Leases, Proc, ProcState};
use super::queue::{Entry, FairQueue};

/// Calls that need the same pools: the program and the call's pools, its
/// own first, then those its command calls into (each once), shared by
/// the call and its place in the queue.
pub(super) type Class = (usize, Rc<[BasePool]>);

/// What the scheduler needs to know of a waiting call besides its class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Need {
    /// It calls into other pools, which call back the primary: it runs on
    /// the primary only.
    pub(super) primary_only: bool,
    /// The lease it takes (see `pools::leases`).
    pub(super) mode: LeaseMode,
}

/// A call that goes now: the process it runs on, the processes it holds its
/// lease on (its own and the primaries of the other pools), and its place
/// in the queue (given back if the connection fails).
#[derive(Debug)]
pub(super) struct Grant<I, O> {
    pub(super) call: I,
    pub(super) proc: Proc,
    pub(super) pools: Vec<Proc>,
    pub(super) place: Option<Entry<O, Class>>,
}

/// What [`schedule`] decided: the calls that go, in order, and for each
/// manifest pool how many calls wait while all its processes are busy.
#[derive(Debug)]
pub(super) struct Plan<I, O> {
    pub(super) grants: Vec<Grant<I, O>>,
    pub(super) demand: Vec<(BasePool, usize)>,
}

/// The ready processes a call of `bases` may run on (none while a pool it
/// needs is not ready).
fn candidates<'a>(
    bases: &[BasePool],
    primary_only: bool,
    procs: &'a [ProcState],
) -> impl Iterator<Item = Proc> + 'a {
    let ready = |p: Proc| procs.get(p.0).is_some_and(|s| s.ready);
    let own = bases[0];
    let usable = others_ready(bases, procs);
    (0..procs.len()).map(Proc).filter(move |&p| {
        usable
            && match primary_only {
                true => p == own.primary() && ready(p),
                false => procs[p.0].base == own && ready(p),
            }
    })
}

/// Whether the primaries of the pools a call of `bases` goes through
/// (all but its own) are ready.
fn others_ready(bases: &[BasePool], procs: &[ProcState]) -> bool {
    bases[1..]
        .iter()
        .all(|b| procs.get(b.primary().0).is_some_and(|s| s.ready))
}

/// Takes out of `queue` the calls of `program` that can run now, takes
/// their leases in `leases`, and says where each goes. `procs` is the
/// program's processes (by [`Proc`]), `n_bases` its manifest pools, `need`
/// what a waiting call needs (`None`: the call is gone, it leaves the
/// queue).
pub(super) fn schedule<I, O>(
    queue: &mut FairQueue<I, O, Class>,
    program: usize,
    n_bases: usize,
    procs: &[ProcState],
    leases: &mut Leases,
    need: impl Fn(I) -> Option<Need>,
) -> Plan<I, O>
where
    I: Copy + Eq + Hash,
    O: Clone + Eq + Hash,
{
    // Sized when a pool is first blocked, and counted only for pools with
    // calls left waiting: a call that goes at once allocates neither.
    let mut blocked: Vec<bool> = Vec::new();
    let mut demand: Vec<(BasePool, usize)> = Vec::new();
    let wanted = |demand: &mut Vec<(BasePool, usize)>, base: BasePool, n: usize| match demand
        .iter_mut()
        .find(|(b, _)| *b == base)
    {
        Some((_, waiting)) => *waiting += n,
        None => demand.push((base, n)),
    };
    let mut done: Vec<Rc<[BasePool]>> = Vec::new();
    let mut grants = Vec::new();
    while let Some((class, id)) = queue.next(|(p, bases)| *p == program && !done.contains(bases)) {
        let Some(Need { primary_only, mode }) = need(id) else {
            // Cannot happen (calls leave the queue when they end); never
            // loop on it.
            queue.remove(id);
            continue;
        };
        let bases = class.1.clone();
        if bases.iter().any(|b| blocked.get(b.0) == Some(&true)) {
            if !primary_only {
                wanted(&mut demand, bases[0], queue.class_len(class));
            }
            done.push(bases);
            continue;
        }
        let others: Vec<Proc> = bases[1..].iter().map(|b| b.primary()).collect();
        let mut found = false;
        let mut chosen: Option<Proc> = None;
        for p in candidates(&bases, primary_only, procs) {
            found = true;
            let free = leases.available(&[p], mode) && leases.available(&others, mode);
            if free && chosen.is_none_or(|c| (leases.busy(p), p) < (leases.busy(c), c)) {
                chosen = Some(p);
            }
        }
        if !found {
            // Waiting for a pool to start (so is the whole class): it is
            // scheduled again when the pool is ready. A burst that arrives
            // meanwhile asks for its replicas now, so that they start at
            // the same time as the pool rather than after it.
            if !primary_only && others_ready(&bases, procs) {
                wanted(&mut demand, bases[0], queue.class_len(class));
            }
            done.push(bases);
            continue;
        }
        let Some(proc) = chosen else {
            if blocked.is_empty() {
                blocked.resize(n_bases, false);
            }
            for b in bases.iter() {
                if let Some(flag) = blocked.get_mut(b.0) {
                    *flag = true;
                }
            }
            if !primary_only {
                wanted(&mut demand, bases[0], queue.class_len(class));
            }
            done.push(bases);
            continue;
        };
        let mut pools = others;
        pools.insert(0, proc);
        let place = queue.serve(id);
        leases.take(&pools, mode);
        grants.push(Grant {
            call: id,
            proc,
            pools,
            place,
        });
    }
    demand.sort_unstable_by_key(|&(base, _)| base.0);
    Plan { grants, demand }
}

#[cfg(test)]
mod tests;
