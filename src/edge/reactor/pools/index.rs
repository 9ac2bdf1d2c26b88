//! Typed indices into a program's pools: a manifest pool ([`BasePool`]) and
//! a process serving one ([`Proc`]: the primary or a replica); and the
//! pools' deadlines by what they are for ([`PoolTimer`]).

use crate::edge::reactor::timers::TimerKey;

/// A manifest pool of a program: its index in the manifest's pool list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(in crate::edge::reactor) struct BasePool(pub(in crate::edge::reactor) usize);

/// A process of a program's pools. The primary of manifest pool `i` is
/// `Proc(i)` (the manifest's pools come first); replicas follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(in crate::edge::reactor) struct Proc(pub(in crate::edge::reactor) usize);

impl BasePool {
    /// The primary process of this pool (the one other pools call).
    pub(in crate::edge::reactor) fn primary(self) -> Proc {
        Proc(self.0)
    }
}

/// A pool deadline, by what it is for. The order is the order in which
/// deadlines due at once are handled: by program, idle replicas first,
/// then `--pool-min`, then each process's probe and start-up timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(in crate::edge::reactor) enum PoolTimer {
    /// A ready replica with no call stops after `--replica-idle`.
    Idle(usize, Proc),
    /// `--pool-min`: a replica that failed may be started again.
    Warm(usize),
    /// The next readiness probe of a starting process.
    Probe(usize, Proc),
    /// A starting process did not become ready (`--pool-start-timeout`).
    StartTimeout(usize, Proc),
}

/// A pool deadline in one word whose order is the order of handling:
/// the program (32 bits), the kind (2), the process (29), and the probe or
/// start-up timeout (1). Programs and processes are counted in the
/// thousands at most.
impl TimerKey for PoolTimer {
    fn pack(self) -> u64 {
        let (program, kind, i, last) = match self {
            PoolTimer::Idle(program, i) => (program, 0, i.0, 0),
            PoolTimer::Warm(program) => (program, 1, 0, 0),
            PoolTimer::Probe(program, i) => (program, 2, i.0, 0),
            PoolTimer::StartTimeout(program, i) => (program, 2, i.0, 1),
        };
        debug_assert!(program < 1 << 32 && i < 1 << 29);
        ((program as u64) << 32) | (kind << 30) | ((i as u64) << 1) | last
    }

    fn unpack(word: u64) -> PoolTimer {
        let program = (word >> 32) as usize;
        let i = Proc(((word >> 1) & ((1 << 29) - 1)) as usize);
        match ((word >> 30) & 3, word & 1) {
            (0, _) => PoolTimer::Idle(program, i),
            (1, _) => PoolTimer::Warm(program),
            (_, 0) => PoolTimer::Probe(program, i),
            _ => PoolTimer::StartTimeout(program, i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_deadline_packs_into_one_word_and_back_in_order() {
        let keys = [
            PoolTimer::Idle(0, Proc(3)),
            PoolTimer::Idle(0, Proc(5)),
            PoolTimer::Warm(0),
            PoolTimer::Probe(0, Proc(2)),
            PoolTimer::StartTimeout(0, Proc(2)),
            PoolTimer::Probe(0, Proc(4)),
            PoolTimer::Idle(1, Proc(0)),
            PoolTimer::StartTimeout(7, Proc((1 << 29) - 1)),
        ];
        for pair in keys.windows(2) {
            assert!(pair[0].pack() < pair[1].pack(), "{pair:?}");
        }
        for key in keys {
            assert_eq!(PoolTimer::unpack(key.pack()), key);
        }
    }
}
