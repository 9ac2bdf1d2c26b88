//! Unit tests of the pool set: default replica caps, and the replica
//! choices (how many to start, which slot, which idle ones stop) on
//! processes that are never spawned.

use super::super::leases::LeaseMode;
use super::*;
use crate::edge::cli::Settings;
use crate::edge::reactor::pools::Cx;

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
    PoolSet::new(
        vec![Runtime {
            pools,
            tmpdir: None,
            run_dir: None,
            basename: String::new(),
            volume0: None,
            shm_reader: shm::ShmReader::new("", Path::new("")),
            routing: Routing::new(None, false),
            leases,
            retired: false,
        }],
        Limits::of(&Settings::default()),
    )
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
    let all: Vec<Proc> = set.procs(0).collect();
    assert_eq!(set.idle_among(0, &all, now, idle), [Proc(1)]);
    assert_eq!(
        set.idle_among(0, &all, now - Duration::from_secs(1), idle),
        []
    );
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

/// Runs `op` on `set` with what a pool operation is handed (a poller
/// nothing is registered with, default settings but `settings`).
fn with_cx(set: &mut PoolSet, settings: &Settings, op: impl FnOnce(&mut PoolSet, &mut Cx)) {
    let poll = mio::Poll::new().expect("poller");
    let mut sources = crate::edge::reactor::Sources::default();
    let traces = |_: usize, _: Proc| None;
    let mut cx = Cx {
        registry: poll.registry(),
        sources: &mut sources,
        settings,
        traces: &traces,
    };
    op(set, &mut cx);
}

/// No process has this pid (pids stay below 2^22 on Linux).
const NO_PID: i32 = 1 << 30;

#[test]
fn each_deadline_follows_from_its_process_state() {
    use PoolStatus::{Ready, Starting};
    let limits = Limits::of(&Settings::default());
    let mut set = set_of(vec![(0, 0, Starting), (0, 1, Ready), (0, 2, Ready)]);
    let rt = &set.programs[0];
    let (p0, p1) = (&rt.pools[0], &rt.pools[1]);
    // Starting without a process (its old one is being stopped): no timeout.
    assert_eq!(rt.due_at(Proc(0), &limits), (None, None));
    let start = p0.life.started_at + limits.start_timeout;
    let idle = p1.last_used + limits.replica_idle;
    set[(0, Proc(0))].pid = Some(NO_PID);
    let rt = &set.programs[0];
    assert_eq!(rt.due_at(Proc(0), &limits), (Some(start), None));
    // A ready replica with no call goes idle; the ready primary never does.
    assert_eq!(rt.due_at(Proc(1), &limits), (None, Some(idle)));
    set.leases_mut(0).take(&[Proc(2)], LeaseMode::Shared);
    assert_eq!(set.programs[0].due_at(Proc(2), &limits), (None, None));
    let mut primary = set_of(vec![(0, 0, Ready)]);
    assert_eq!(primary.programs[0].due_at(Proc(0), &limits), (None, None));
    primary.touch(0, Proc(0), Instant::now());
    assert!(primary.timers.next().is_none(), "a primary never idles");
}

#[test]
fn state_changes_arm_the_deadlines_and_a_forgotten_one_is_reported() {
    use PoolStatus::{Ready, Starting};
    let settings = Settings::default();
    let mut set = set_of(vec![(0, 0, Ready), (0, 1, Starting)]);
    let replica = (0, Proc(1));
    set[replica].pid = Some(NO_PID);
    // Written past `set_status`: the scan finds what is not armed.
    let missing = set.unarmed(&settings);
    assert_eq!(missing, ["start-up timeout of py#1", "probe of py#1"]);
    set.set_status(0, Proc(1), Starting);
    set.schedule_probe(0, Proc(1));
    assert_eq!(set.unarmed(&settings), Vec::<String>::new());
    // Ready: no timeout; idle from its last use, and again after each call.
    set.set_status(0, Proc(1), Ready);
    assert_eq!(set.unarmed(&settings), Vec::<String>::new());
    let idle = set.limits.replica_idle;
    let key = PoolTimer::Idle(0, Proc(1));
    let later = Instant::now() + Duration::from_secs(5);
    set.leases_mut(0).take(&[Proc(1)], LeaseMode::Exclusive);
    set.touch(0, Proc(1), later);
    assert_eq!(set.timers.get(&key), None, "busy: not idle");
    set.release(0, &[Proc(1)], LeaseMode::Exclusive);
    assert_eq!(set.timers.get(&key), Some(later + idle));
    // A lease given back past `release` leaves the replica idle unarmed.
    set.leases_mut(0).take(&[Proc(1)], LeaseMode::Shared);
    set.touch(0, Proc(1), later);
    set.leases_mut(0).release(&[Proc(1)], LeaseMode::Shared);
    assert_eq!(set.unarmed(&settings), ["idle deadline of py#1"]);
}

#[test]
fn a_turn_acts_only_on_armed_deadlines_never_on_a_scan() {
    use PoolStatus::{Ready, Starting};
    let settings = Settings::default();
    // Every process is past a deadline a scan would act on, but none is
    // armed (statuses written past `set_status`): a turn must do nothing,
    // and there is no next deadline. A scan of the processes coming back
    // into the turn or into `next_deadline` fails this test.
    let mut set = set_of(vec![(0, 0, Starting), (0, 1, Ready), (0, 2, Ready)]);
    set[(0, Proc(0))].pid = Some(NO_PID);
    let far = Instant::now() + Duration::from_secs(3600);
    assert_eq!(set.next_deadline(), None);
    with_cx(&mut set, &settings, |set, cx| set.timers(cx, far));
    assert!(matches!(set[(0, Proc(0))].status, Starting));
    assert!(set[(0, Proc(0))].probing.probe.is_none());
    assert!(matches!(set[(0, Proc(2))].status, Ready));
    // Armed (as `set_status` does), the same deadlines are acted on.
    set.rearm(0, Proc(0));
    set.rearm(0, Proc(2));
    let idle = set[(0, Proc(2))].last_used + set.limits.replica_idle;
    assert_eq!(set.next_deadline(), Some(idle), "the idle one is first");
    with_cx(&mut set, &settings, |set, cx| set.timers(cx, far));
    assert!(matches!(
        set[(0, Proc(0))].status,
        PoolStatus::Failed { .. }
    ));
    assert!(matches!(set[(0, Proc(2))].status, PoolStatus::Idle));
    assert!(
        matches!(set[(0, Proc(1))].status, Ready),
        "not armed: left alone"
    );
}

#[test]
fn spares_are_made_only_for_processes_that_became_ready_or_gave_theirs_away() {
    let mut set = set_of(vec![(0, 0, PoolStatus::Idle), (1, 0, PoolStatus::Idle)]);
    let made = std::cell::Cell::new(0);
    let make = || {
        made.set(made.get() + 1);
        let (socket, _) = mio::net::UnixStream::pair().ok()?;
        Some(Spare {
            token: mio::Token(made.get()),
            socket,
        })
    };
    set.make_spares(make);
    assert_eq!(made.get(), 0, "no process is ready");
    set.set_status(0, Proc(1), PoolStatus::Ready);
    set.make_spares(make);
    set.make_spares(make);
    assert_eq!(made.get(), 1, "the process that became ready, once");
    assert!(set.connect_to(0, Proc(1)).0.is_some());
    assert!(
        set.connect_to(0, Proc(0)).0.is_none(),
        "not ready: none made"
    );
    set.make_spares(make);
    assert_eq!(
        made.get(),
        2,
        "the spare given away is replaced; the idle process gets none"
    );
    // A failed make is tried again next time.
    set.connect_to(0, Proc(1));
    set.make_spares(|| None);
    set.make_spares(make);
    assert_eq!(made.get(), 3);
    assert!(set.connect_to(0, Proc(1)).0.is_some());
}
