//! Table tests of the scheduler: leases exclusive and shared, replicas,
//! primary-only calls, busy and starting processes, fairness across owners.

use super::*;

use LeaseMode::{Exclusive as X, Shared as S};

/// A waiting call: id, owner, its pools (own first), primary-only, lease.
type Waiting = (u32, char, &'static [usize], bool, LeaseMode);

struct Case {
    name: &'static str,
    /// Each process: its manifest pool and whether it is ready.
    procs: &'static [(usize, bool)],
    n_bases: usize,
    /// Leases held before: processes and mode.
    held: &'static [(&'static [usize], LeaseMode)],
    waiting: &'static [Waiting],
    /// The calls that go, in order, with their process.
    go: &'static [(u32, usize)],
    /// Calls waiting while every process of their pool is busy.
    demand: &'static [(usize, usize)],
}

fn procs(list: &[usize]) -> Vec<Proc> {
    list.iter().map(|&p| Proc(p)).collect()
}

/// The calls that go (with their process), the demand, the leases after.
type Outcome = (Vec<(u32, usize)>, Vec<(usize, usize)>, Leases);

fn run(case: &Case) -> Outcome {
    let states: Vec<ProcState> = case
        .procs
        .iter()
        .map(|&(base, ready)| ProcState {
            base: BasePool(base),
            ready,
        })
        .collect();
    let mut leases = Leases::new(states.len());
    for (pools, mode) in case.held {
        leases.take(&procs(pools), *mode);
    }
    let mut queue: FairQueue<u32, char, Class> = FairQueue::new(0, 0);
    for &(id, owner, bases, _, _) in case.waiting {
        let class = (0, bases.iter().map(|&b| BasePool(b)).collect());
        queue.push(id, owner, class, None).unwrap();
    }
    let need = |id: u32| {
        let &(_, _, _, primary_only, mode) = case.waiting.iter().find(|w| w.0 == id)?;
        Some(Need { primary_only, mode })
    };
    let plan = schedule(&mut queue, 0, case.n_bases, &states, &mut leases, need);
    let go = plan.grants.iter().map(|g| (g.call, g.proc.0)).collect();
    let demand = plan.demand.iter().map(|&(b, n)| (b.0, n)).collect();
    for grant in &plan.grants {
        let own = grant.pools[0];
        assert_eq!(
            own, grant.proc,
            "{}: the lease covers its process",
            case.name
        );
    }
    (go, demand, leases)
}

const CASES: &[Case] = &[
    Case {
        name: "exclusive calls take one process each; the rest wait and ask for replicas",
        procs: &[(0, true)],
        n_bases: 1,
        held: &[],
        waiting: &[(1, 'a', &[0], false, X), (2, 'a', &[0], false, X)],
        go: &[(1, 0)],
        demand: &[(0, 1)],
    },
    Case {
        name: "shared calls share a process",
        procs: &[(0, true)],
        n_bases: 1,
        held: &[],
        waiting: &[(1, 'a', &[0], false, S), (2, 'a', &[0], false, S)],
        go: &[(1, 0), (2, 0)],
        demand: &[],
    },
    Case {
        name: "a shared call waits for an exclusive one",
        procs: &[(0, true)],
        n_bases: 1,
        held: &[(&[0], X)],
        waiting: &[(1, 'a', &[0], false, S)],
        go: &[],
        demand: &[(0, 1)],
    },
    Case {
        name: "replicas: the least busy ready process first",
        procs: &[(0, true), (0, true), (0, true)],
        n_bases: 1,
        held: &[(&[0], S), (&[0], S), (&[1], S)],
        waiting: &[(1, 'a', &[0], false, S), (2, 'a', &[0], false, S)],
        go: &[(1, 2), (2, 1)],
        demand: &[],
    },
    Case {
        name: "a busy primary sends the call to a ready replica, not a starting one",
        procs: &[(0, true), (0, false), (0, true)],
        n_bases: 1,
        held: &[(&[0], X)],
        waiting: &[(1, 'a', &[0], false, X)],
        go: &[(1, 2)],
        demand: &[],
    },
    Case {
        name: "a call through another pool runs on the primary only and asks for no replica",
        procs: &[(0, true), (1, true), (0, true)],
        n_bases: 2,
        held: &[(&[0], X)],
        waiting: &[(1, 'a', &[0, 1], true, X)],
        go: &[],
        demand: &[],
    },
    Case {
        name: "a call through another pool leases that pool's primary too",
        procs: &[(0, true), (1, true)],
        n_bases: 2,
        held: &[],
        waiting: &[(1, 'a', &[0, 1], true, X), (2, 'b', &[1], false, X)],
        go: &[(1, 0)],
        demand: &[(1, 1)],
    },
    Case {
        name: "a pool not ready yet holds its calls without blocking others; they ask for replicas",
        procs: &[(0, false), (1, true)],
        n_bases: 2,
        held: &[],
        waiting: &[(1, 'a', &[0], false, X), (2, 'a', &[1], false, X)],
        go: &[(2, 1)],
        demand: &[(0, 1)],
    },
    Case {
        name: "a burst for a starting pool asks for a replica per call at once",
        procs: &[(0, false)],
        n_bases: 1,
        held: &[],
        waiting: &[
            (1, 'a', &[0], false, X),
            (2, 'b', &[0], false, X),
            (3, 'a', &[0], false, S),
        ],
        go: &[],
        demand: &[(0, 3)],
    },
    Case {
        name: "a call through a pool that is not ready asks for no replica",
        procs: &[(0, true), (1, false)],
        n_bases: 2,
        held: &[],
        waiting: &[(1, 'a', &[0, 1], false, X)],
        go: &[],
        demand: &[],
    },
    Case {
        name: "a waiting exclusive call blocks later calls on its pools",
        procs: &[(0, true), (1, true)],
        n_bases: 2,
        held: &[(&[0], S)],
        waiting: &[
            (1, 'a', &[0], false, X),
            (2, 'b', &[0, 1], true, S),
            (3, 'c', &[1], false, S),
        ],
        go: &[(3, 1)],
        demand: &[(0, 1)],
    },
    Case {
        name: "round-robin across owners",
        procs: &[(0, true)],
        n_bases: 1,
        held: &[],
        waiting: &[
            (1, 'a', &[0], false, S),
            (2, 'a', &[0], false, S),
            (3, 'a', &[0], false, S),
            (4, 'b', &[0], false, S),
        ],
        go: &[(1, 0), (4, 0), (2, 0), (3, 0)],
        demand: &[],
    },
];

#[test]
fn the_scheduler_decides_as_the_table_says() {
    for case in CASES {
        let (go, demand, _) = run(case);
        assert_eq!(go, case.go, "{}: calls that go", case.name);
        assert_eq!(demand, case.demand, "{}: demand", case.name);
    }
}

#[test]
fn granted_calls_hold_their_leases() {
    let case = &CASES[6];
    let (_, _, leases) = run(case);
    assert!(leases.exclusive(Proc(0)) && leases.exclusive(Proc(1)));
}

#[test]
fn a_call_that_is_gone_leaves_the_queue() {
    let states = [ProcState {
        base: BasePool(0),
        ready: true,
    }];
    let mut leases = Leases::new(1);
    let mut queue: FairQueue<u32, char, Class> = FairQueue::new(0, 0);
    queue
        .push(1, 'a', (0, vec![BasePool(0)].into()), None)
        .unwrap();
    let plan = schedule(&mut queue, 0, 1, &states, &mut leases, |_| None);
    assert!(plan.grants.is_empty());
    assert_eq!(queue.len(), 0);
}
