//! Unit tests of the pool set: default replica caps, and the replica
//! choices (how many to start, which slot, which idle ones stop) on
//! processes that are never spawned.

use super::super::leases::LeaseMode;
use super::*;

#[test]
fn threaded_and_single_threaded_pools_get_replicas_by_default() {
    for lang in ["py", "Python3", "r", "R", "cpp", "c++", "rust"] {
        assert_eq!(default_replica_cap(lang, 2), 8, "{lang}");
        assert_eq!(default_replica_cap(lang, 16), 16, "{lang}");
    }
    // Languages whose pools were not checked keep one process.
    assert_eq!(default_replica_cap("jl", 16), 1);
    assert_eq!(default_replica_cap("", 4), 1);
}

#[test]
fn pool_replicas_name_a_language_by_any_spelling() {
    let asked = |pairs: &[(&str, usize)]| -> Vec<(String, usize)> {
        pairs.iter().map(|(l, n)| (l.to_string(), *n)).collect()
    };
    // Each alias caps the pool the manifest names by the canonical name,
    // and the other way round.
    for (typed, pool) in [
        ("c++", "cpp"),
        ("cpp", "c++"),
        ("CPP", "cpp"),
        ("rs", "rust"),
        ("python", "py"),
        ("py", "python3"),
    ] {
        assert_eq!(
            replica_cap(&asked(&[(typed, 4)]), pool, 2),
            4,
            "{typed} {pool}"
        );
    }
    // The last entry for a language wins; other languages keep the default.
    let two = asked(&[("cpp", 4), ("c++", 2)]);
    assert_eq!(replica_cap(&two, "cpp", 2), 2);
    assert_eq!(replica_cap(&two, "py", 2), 8);
    assert_eq!(replica_cap(&asked(&[("jl", 3)]), "JL", 2), 3);
}

/// A pool set of one program whose processes are `(base, replica,
/// status)`, none of them spawned, with no files.
fn set_of(procs: Vec<(usize, usize, PoolStatus)>) -> PoolSet {
    let pools: Vec<Pool> = procs
        .into_iter()
        .map(|(base, replica, status)| {
            let spawn = proc::PoolSpawn {
                program: vec!["py".into()],
                args: Vec::new(),
                env: Vec::new(),
            };
            let mut pool = Pool::new("py", BasePool(base), replica, None, "s".into(), spawn);
            pool.status = status;
            pool
        })
        .collect();
    let leases = Leases::new(pools.len());
    PoolSet::new(vec![Runtime {
        pools,
        tmpdir: None,
        run_dir: None,
        basename: String::new(),
        volume0: None,
        shm_reader: shm::ShmReader::new("", Path::new("")),
        routing: Routing::new(None, false),
        leases,
        retired: false,
    }])
}

fn failed(at: Instant) -> PoolStatus {
    PoolStatus::Failed {
        message: String::new(),
        at,
    }
}

#[test]
fn replicas_start_for_calls_the_starting_ones_will_not_take_up_to_the_cap() {
    use PoolStatus::{Idle, Ready, Starting};
    let set = set_of(vec![(0, 0, Ready), (1, 0, Ready), (0, 1, Starting)]);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 5, 8), 4);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 5, 3), 1);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 1, 8), 0);
    assert_eq!(set.replicas_wanted(0, BasePool(1), 2, 8), 2);
    // A burst for a starting pool starts its replicas at once, beside it.
    let set = set_of(vec![(0, 0, Starting), (0, 1, Idle)]);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 8, 8), 7);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 1, 8), 0);
    // Not while the primary is down: a pool that cannot start is not
    // multiplied.
    let set = set_of(vec![(0, 0, Idle)]);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 3, 8), 0);
    let set = set_of(vec![(0, 0, failed(Instant::now()))]);
    assert_eq!(set.replicas_wanted(0, BasePool(0), 3, 8), 0);
}

#[test]
fn pool_min_tops_a_live_pool_up_to_its_minimum_within_the_cap() {
    use PoolStatus::{Idle, Ready, Starting};
    let set = set_of(vec![(0, 0, Starting), (1, 0, Ready), (0, 1, Ready)]);
    assert_eq!(set.live(0, BasePool(0)), 2);
    assert_eq!(set.replicas_to_keep(0, BasePool(0), 4, 8), 2);
    assert_eq!(set.replicas_to_keep(0, BasePool(0), 4, 3), 1);
    assert_eq!(set.replicas_to_keep(0, BasePool(0), 1, 8), 0);
    assert_eq!(set.replicas_to_keep(0, BasePool(1), 3, 8), 2);
    // Nothing while the primary is down.
    let set = set_of(vec![(0, 0, Idle), (0, 1, Ready)]);
    assert_eq!(set.replicas_to_keep(0, BasePool(0), 4, 8), 0);
}

#[test]
fn a_stopped_replica_or_one_failed_long_ago_is_started_again_before_a_new_one() {
    use PoolStatus::{Idle, Ready};
    let now = Instant::now() + RETRY_FAILED_AFTER * 2;
    let mut set = set_of(vec![
        (0, 0, Ready),
        (0, 1, Ready),
        (0, 2, failed(now)),
        (0, 3, Idle),
    ]);
    assert_eq!(set.replica_slot(0, BasePool(0), 8, now), Some(Proc(3)));
    let mut set = set_of(vec![
        (0, 0, Ready),
        (0, 1, failed(now - RETRY_FAILED_AFTER)),
    ]);
    assert_eq!(set.replica_slot(0, BasePool(0), 8, now), Some(Proc(1)));
    // A recent failure is not retried, and at the cap no slot is added.
    let mut set = set_of(vec![(0, 0, Ready), (0, 1, failed(now))]);
    assert_eq!(set.replica_slot(0, BasePool(0), 2, now), None);
    // The primary is never taken for a replica.
    let mut set = set_of(vec![(0, 0, Idle)]);
    assert_eq!(set.replica_slot(0, BasePool(0), 1, now), None);
}

#[test]
fn only_ready_replicas_idle_long_enough_with_no_lease_stop() {
    use PoolStatus::{Ready, Starting};
    let idle = Duration::from_secs(30);
    let mut set = set_of(vec![
        (0, 0, Ready),
        (0, 1, Ready),
        (0, 2, Ready),
        (0, 3, Starting),
        (0, 4, Ready),
    ]);
    let start = set[(0, Proc(0))].last_used;
    for slot in 0..4 {
        set.touch(0, Proc(slot), start);
    }
    set.touch(0, Proc(4), start + idle);
    set.leases_mut(0).take(&[Proc(2)], LeaseMode::Shared);
    let now = start + idle;
    assert_eq!(set.idle_replicas(0, now, idle), [Proc(1)]);
    assert_eq!(set.idle_replicas(0, now - Duration::from_secs(1), idle), []);
}

#[test]
fn five_starts_within_the_window_are_a_crash_loop() {
    let t0 = Instant::now();
    let mut life = Life {
        started_at: t0,
        starts: VecDeque::new(),
        broken: None,
    };
    let second = Duration::from_secs(1);
    for n in 0..4 {
        life.record_start(t0 + second * n);
    }
    assert_eq!(life.crash_loop(t0 + second * 4), (4, false));
    life.record_start(t0 + second * 4);
    assert_eq!(life.crash_loop(t0 + second * 4), (5, true));
    assert_eq!(life.started_at, t0 + second * 4);
    // Starts older than the window are forgotten at the next start.
    life.record_start(t0 + RESTART_WINDOW + second * 2);
    assert_eq!(life.starts.len(), 4);
    assert_eq!(
        life.crash_loop(t0 + RESTART_WINDOW + second * 2),
        (4, false)
    );
}
