//! Unit tests of the fair queue and the diagnostics throttle.

use std::time::{Duration, Instant};

use super::*;

type Q = FairQueue<u32, &'static str, u8>;

/// Pops the whole queue in fair order (one class).
fn drain(q: &mut Q) -> Vec<u32> {
    let mut order = Vec::new();
    while let Some((&class, _)) = q.next(|_| true) {
        let (id, _) = q.pop(&class).expect("a head");
        order.push(id);
    }
    order
}

#[test]
fn owners_take_turns_and_each_keeps_its_arrival_order() {
    let mut q = Q::new(0, 0);
    for id in 1..=4 {
        q.push(id, "a", 0, None).unwrap();
    }
    q.push(10, "b", 0, None).unwrap();
    q.push(11, "b", 0, None).unwrap();
    q.push(20, "c", 0, None).unwrap();
    assert_eq!(q.len(), 7);
    assert_eq!(q.owner_len(&"a"), 4);
    assert_eq!(drain(&mut q), vec![1, 10, 20, 2, 11, 3, 4]);
    assert_eq!(q.len(), 0);
    assert_eq!(q.owner_len(&"a"), 0);
}

#[test]
fn a_newcomer_goes_before_the_rest_of_a_long_queue() {
    let mut q = Q::new(0, 0);
    for id in 0..1000 {
        q.push(id, "busy", 0, None).unwrap();
    }
    // Five of the busy owner's calls are served...
    for expected in 0..5 {
        assert_eq!(q.pop(&0).unwrap().0, expected);
    }
    // ...then a new owner's call goes next (it joins the round being
    // served), not 996th.
    q.push(5000, "new", 0, None).unwrap();
    assert_eq!(q.pop(&0).unwrap().0, 5000);
    assert_eq!(q.pop(&0).unwrap().0, 5);
    assert_eq!(q.pop(&0).unwrap().0, 6);
}

#[test]
fn an_idle_owner_gets_no_credit() {
    let mut q = Q::new(0, 0);
    for id in 0..6 {
        q.push(id, "a", 0, None).unwrap();
    }
    for _ in 0..4 {
        q.pop(&0);
    }
    // "b" was idle for four rounds: it joins the round being served, and
    // then alternates with "a" instead of catching up.
    q.push(10, "b", 0, None).unwrap();
    q.push(11, "b", 0, None).unwrap();
    q.push(12, "b", 0, None).unwrap();
    assert_eq!(drain(&mut q), vec![10, 4, 11, 5, 12]);
}

#[test]
fn classes_merge_in_fair_order_and_can_be_skipped() {
    let mut q = Q::new(0, 0);
    q.push(1, "a", 0, None).unwrap();
    q.push(2, "a", 1, None).unwrap();
    q.push(3, "b", 1, None).unwrap();
    q.push(4, "b", 0, None).unwrap();
    assert_eq!(q.class_len(&0), 2);
    assert_eq!(q.next(|_| true), Some((&0, 1)));
    // Within class 1, b's first call (round 0) is ahead of a's second.
    assert_eq!(q.next(|c| *c == 1), Some((&1, 3)));
    q.pop(&0);
    // Round 0 goes on with b's first call, in class 1.
    assert_eq!(q.next(|_| true), Some((&1, 3)));
    assert_eq!(q.next(|c| *c == 0), Some((&0, 4)));
    assert_eq!(q.next(|c| *c == 7), None);
}

#[test]
fn caps_refuse_per_owner_and_in_total() {
    let mut q = Q::new(2, 3);
    q.push(1, "a", 0, None).unwrap();
    q.push(2, "a", 0, None).unwrap();
    assert_eq!(
        q.push(3, "a", 0, None),
        Err(Refused::Owner { limit: 2 }),
        "the third call of one owner"
    );
    q.push(4, "b", 0, None).unwrap();
    assert_eq!(q.push(5, "c", 0, None), Err(Refused::Total { limit: 3 }));
    assert!(!q.contains(3) && !q.contains(5));
    // A call that leaves makes room for its owner again.
    q.pop(&0);
    q.push(3, "a", 0, None).unwrap();
    // Pushing a queued id again changes nothing.
    q.push(3, "a", 0, None).unwrap();
    assert_eq!(q.len(), 3);
    // 0 means no cap.
    let mut open = Q::new(0, 0);
    for id in 0..10_000 {
        open.push(id, "a", 0, None).unwrap();
    }
    assert_eq!(open.len(), 10_000);
}

#[test]
fn removal_on_cancel_keeps_the_others_in_order() {
    let mut q = Q::new(0, 0);
    for id in 0..5 {
        q.push(id, "a", 0, None).unwrap();
    }
    q.push(10, "b", 0, None).unwrap();
    assert!(q.remove(0).is_some());
    assert!(q.remove(3).is_some());
    assert!(q.remove(3).is_none(), "already gone");
    assert_eq!(drain(&mut q), vec![10, 1, 2, 4]);
    // The removed owner's state goes with its last call.
    let mut q = Q::new(0, 0);
    q.push(1, "a", 0, None).unwrap();
    q.remove(1);
    assert!(q.owners.is_empty() && q.by_tag.is_empty() && q.entries.is_empty());
    assert!(q.classes.values().all(BTreeMap::is_empty));
    assert_eq!(q.class_len(&0), 0);
}

#[test]
fn emptied_classes_are_kept_only_while_few() {
    let mut q = Q::new(0, 0);
    let classes = KEPT_EMPTY_CLASSES as u8 + 4;
    for class in 0..classes {
        q.push(u32::from(class), "a", class, None).unwrap();
    }
    for id in 0..u32::from(classes) {
        q.remove(id);
    }
    assert_eq!(q.classes.len(), KEPT_EMPTY_CLASSES);
    assert!(q.classes.values().all(BTreeMap::is_empty));
    // A kept class takes calls again, in order, and empty ones are skipped.
    q.push(50, "a", 1, None).unwrap();
    q.push(51, "b", classes - 1, None).unwrap();
    q.push(52, "a", 1, None).unwrap();
    assert_eq!(q.class_len(&1), 2);
    assert_eq!(drain(&mut q), vec![50, 51, 52]);
}

#[test]
fn restore_gives_a_popped_call_its_place_back() {
    let mut q = Q::new(1, 0);
    q.push(1, "a", 0, None).unwrap();
    q.push(2, "b", 0, None).unwrap();
    let (id, entry) = q.pop(&0).unwrap();
    assert_eq!(id, 1);
    q.push(3, "a", 0, None).unwrap();
    // Past the per-owner cap of 1: it was admitted before.
    q.restore(id, entry);
    assert_eq!(q.owner_len(&"a"), 2);
    assert_eq!(drain(&mut q), vec![1, 2, 3]);
}

#[test]
fn deadlines_expire_oldest_first_and_leave_with_their_call() {
    let t0 = Instant::now();
    let at = |ms| Some(t0 + Duration::from_millis(ms));
    let mut q = Q::new(0, 0);
    q.push(1, "a", 0, at(30)).unwrap();
    q.push(2, "b", 0, at(10)).unwrap();
    q.push(3, "c", 0, at(20)).unwrap();
    q.push(4, "d", 0, None).unwrap();
    assert_eq!(q.next_deadline(), at(10));
    q.remove(2);
    assert_eq!(q.next_deadline(), at(20));
    assert!(q.expire(t0 + Duration::from_millis(19)).is_empty());
    let gone: Vec<u32> = q
        .expire(t0 + Duration::from_millis(30))
        .into_iter()
        .map(|(id, entry)| {
            assert_eq!(entry.class, 0);
            id
        })
        .collect();
    assert_eq!(gone, vec![3, 1]);
    assert_eq!(q.next_deadline(), None);
    assert_eq!(drain(&mut q), vec![4]);
}

#[test]
fn operations_stay_cheap_with_many_calls_waiting() {
    // 200,000 calls of 1,000 owners: pushing, reading the head and popping
    // are logarithmic, so this is fast; a queue walked per operation would
    // take minutes here.
    let mut q: FairQueue<u32, u32, u8> = FairQueue::new(0, 0);
    for id in 0..200_000 {
        q.push(id, id % 1000, 0, None).unwrap();
    }
    let mut served = vec![0u32; 1000];
    for _ in 0..100_000 {
        let (_, id) = q.next(|_| true).unwrap();
        assert_eq!(q.pop(&0).unwrap().0, id);
        served[(id % 1000) as usize] += 1;
    }
    // Round-robin: every owner got the same share.
    assert!(served.iter().all(|&n| n == 100), "{served:?}");
}

#[test]
fn the_throttle_lets_one_line_per_kind_per_window_and_counts_the_rest() {
    let t0 = Instant::now();
    let mut t = Throttle::default();
    assert_eq!(t.allow("cap", t0), Some(0));
    assert_eq!(t.allow("breaker", t0), Some(0), "kinds are separate");
    assert_eq!(t.allow("cap", t0 + Duration::from_secs(1)), None);
    assert_eq!(t.allow("cap", t0 + Duration::from_secs(2)), None);
    assert_eq!(t.next_flush(), Some(t0 + LOG_EVERY));
    assert!(t.flush(t0 + Duration::from_secs(9)).is_empty());
    assert_eq!(t.allow("cap", t0 + LOG_EVERY), Some(2));
    assert_eq!(t.next_flush(), None);
    // Held-back lines are counted on their own once the window passes.
    let later = t0 + LOG_EVERY + Duration::from_secs(1);
    assert_eq!(t.allow("cap", later), None);
    assert_eq!(t.flush(later + LOG_EVERY), vec![("cap".to_string(), 1)]);
    assert_eq!(t.next_flush(), None);
}

#[test]
fn an_owner_just_served_waits_for_the_next_round() {
    let mut q = Q::new(0, 0);
    // "a" is served at once (nothing else waits), then queues more.
    q.push(1, "a", 0, None).unwrap();
    assert_eq!(q.pop(&0).unwrap().0, 1);
    q.push(2, "a", 0, None).unwrap();
    q.push(3, "a", 0, None).unwrap();
    // "b" has not had a turn in this round: it goes first.
    q.push(10, "b", 0, None).unwrap();
    assert_eq!(drain(&mut q), vec![10, 2, 3]);
    // "a" rests (its last call was served in this round); "b" is forgotten.
    assert_eq!(q.owners.keys().collect::<Vec<_>>(), vec![&"a"]);
    // Once the round moves on, "a" is forgotten too.
    q.push(30, "d", 0, None).unwrap();
    q.push(31, "d", 0, None).unwrap();
    assert_eq!(drain(&mut q), vec![30, 31]);
    assert_eq!(q.owners.keys().collect::<Vec<_>>(), vec![&"d"]);
}

#[test]
fn a_call_waiting_alone_is_queued_like_any_other() {
    let now = Instant::now();
    let mut q = Q::new(0, 0);
    // Alone: counted, found, given its deadline, served with its turn.
    q.push(1, "a", 0, Some(now + Duration::from_secs(5)))
        .unwrap();
    assert_eq!((q.len(), q.class_len(&0), q.class_len(&1)), (1, 1, 0));
    assert_eq!(q.next(|&c| c == 1), None);
    assert_eq!(q.next_deadline(), Some(now + Duration::from_secs(5)));
    assert_eq!(q.pop(&0).unwrap().0, 1);
    // The owner just served waits behind a newcomer of the same round.
    q.push(2, "a", 0, None).unwrap();
    q.push(3, "b", 1, None).unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(q.next(|_| true).map(|(_, id)| id), Some(3));
    // Alone again, then past its deadline.
    assert_eq!(q.pop(&1).unwrap().0, 3);
    assert_eq!(q.pop(&0).unwrap().0, 2);
    q.push(4, "a", 0, Some(now)).unwrap();
    let gone: Vec<u32> = q.expire(now).into_iter().map(|(id, _)| id).collect();
    assert_eq!(gone, vec![4]);
    assert_eq!((q.len(), q.next_deadline()), (0, None));
    // A call given back after its connection failed keeps its place.
    q.push(5, "a", 0, None).unwrap();
    let (id, entry) = q.pop(&0).unwrap();
    q.restore(id, entry);
    q.push(6, "b", 0, None).unwrap();
    assert_eq!(drain(&mut q), vec![5, 6]);
}
