//! Results of any size, the way pools really send them (issue 11): inline up
//! to the manifest's threshold, then shared-memory blocks (RPTR) or files
//! (FILE), checked byte for byte, under concurrency and under the worst
//! interleaving of the pool's free-on-next-job rule.
//!
//! The test pool is as strict as a real Python pool here: one worker runs
//! the calls one at a time, its sends fail when the socket buffer is full,
//! and it frees the previous result's block as soon as it is handed the next
//! connection.

use std::fs;

use serde_json::{json, Value as Json};

use crate::pools::{pool_of, text_of, Program, Server};
use crate::util::TIMEOUT;

/// The exact text `bigList n` must come back as.
pub(crate) fn list_text(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// The exact text `bigText n` must come back as.
fn text_text(n: usize) -> String {
    format!("\"{}\"", "x".repeat(n))
}

#[track_caller]
pub(crate) fn assert_exact(result: &Json, expected: &str, what: &str) {
    assert_eq!(result["isError"], json!(false), "{what}: {result}");
    let text = text_of(result);
    if text != expected {
        let at = text
            .bytes()
            .zip(expected.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(text.len().min(expected.len()));
        panic!(
            "{what}: {} bytes instead of {}, first difference at byte {at}: {:?}",
            text.len(),
            expected.len(),
            &text[at.saturating_sub(20)..(at + 20).min(text.len())]
        );
    }
}

/// Issue 11, defect 1: results above the inline threshold used to be forced
/// inline, and a real pool's non-blocking send gave up once the socket
/// buffer was full ("closed the connection in the middle of its reply").
#[test]
fn results_above_the_inline_threshold_come_back_through_shared_memory() {
    let mut s = Server::owning(Program::shapes(), &[]);
    for n in [4094, 4095, 30_000, 200_000] {
        let id = s.call("bigList", json!({"_1": n}));
        assert_exact(
            &s.result_within(id, TIMEOUT),
            &list_text(n),
            &format!("bigList {n}"),
        );
    }
    for n in [65_520, 65_521, 1_000_000] {
        let id = s.call("bigText", json!({"_1": n}));
        assert_exact(
            &s.result_within(id, TIMEOUT),
            &text_text(n),
            &format!("bigText {n}"),
        );
    }
    // The pool made a volume of its own for the large results.
    let pool = pool_of(&s, None);
    let volumes: Vec<String> = fs::read_dir("/dev/shm")
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&format!("{}_", pool.basename)))
                .collect()
        })
        .unwrap_or_default();
    assert!(volumes.len() >= 2, "{volumes:?}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn file_results_when_the_manifest_says_no_shm() {
    let program = Program::shapes().edited(|m| m["no_shm"] = json!(true));
    let mut s = Server::owning(program, &[]);
    for n in [10, 50_000] {
        let id = s.call("bigList", json!({"_1": n}));
        assert_exact(
            &s.result_within(id, TIMEOUT),
            &list_text(n),
            &format!("bigList {n}"),
        );
    }
    let id = s.call("bigText", json!({"_1": 300_000}));
    assert_exact(
        &s.result_within(id, TIMEOUT),
        &text_text(300_000),
        "bigText",
    );
    // Each result file is read once and removed.
    let pool = pool_of(&s, None);
    let left: Vec<_> = fs::read_dir(&pool.tmpdir)
        .expect("the run directory")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("morloc-pkt-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn the_manifest_inline_size_is_what_pools_use() {
    // 0: every result except () goes through shared memory, even an Int.
    let program = Program::shapes().edited(|m| m["inline_size"] = json!(0));
    let mut s = Server::owning(program, &[]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 41})), "42");
    let id = s.call("bigList", json!({"_1": 3}));
    assert_exact(&s.result_within(id, TIMEOUT), "[0,1,2]", "bigList 3");
    assert_eq!(s.finish(), 0);
}

/// 32 calls in flight at once, large and small, every byte checked.
#[test]
fn many_concurrent_mixed_results_are_exact() {
    let mut s = Server::owning(Program::shapes(), &[]);
    let mut expected = Vec::new();
    for i in 0..32usize {
        let (tool, n, text) = match i % 4 {
            0 => ("bigList", 5_000 + i * 997, list_text(5_000 + i * 997)),
            1 => ("bigText", 70_000 + i * 4_001, text_text(70_000 + i * 4_001)),
            2 => ("addOne", i, (i + 1).to_string()),
            _ => ("bigList", i, list_text(i)),
        };
        let id = s.call(tool, json!({"_1": n}));
        expected.push((id, text, format!("{tool} {n}")));
    }
    for (id, text, what) in expected {
        assert_exact(&s.result_within(id, TIMEOUT), &text, &what);
    }
    assert_eq!(s.finish(), 0);
}

/// The hazard of RPTR results: a pool worker frees its last result's block
/// as soon as it is handed its next connection. Here the test pool forces
/// the worst interleaving: it sends each RPTR reply but its last byte, takes
/// the next connection if one arrives within 100 ms (freeing the block), and
/// only then completes the reply. A server that connected the next call
/// before copying the result out would read zeroed memory every time.
#[test]
fn the_worst_interleaving_cannot_corrupt_a_result() {
    let program = Program::wrapped("export TESTPOOL_RACE_MS=100");
    let mut s = Server::owning(program, &[]);
    let mut expected = Vec::new();
    for i in 0..6usize {
        let n = 5_000 + i;
        let id = s.call("bigList", json!({"_1": n}));
        expected.push((id, list_text(n), format!("bigList {n}")));
        let id = s.call("addOne", json!({"_1": i}));
        expected.push((id, (i + 1).to_string(), format!("addOne {i}")));
    }
    for (id, text, what) in expected {
        assert_exact(&s.result_within(id, TIMEOUT), &text, &what);
    }
    assert_eq!(s.finish(), 0);
}

/// Arguments always go inline, whatever their size: the pool (non-blocking,
/// like a real one) reads them as they arrive.
#[test]
fn large_arguments_travel_inline() {
    let mut s = Server::owning(Program::shapes(), &[]);
    let name = "n".repeat(5_000_000);
    let id = s.call("hello", json!({"_1": name}));
    let expected = format!("\"Hello, {name}!\"");
    assert_exact(&s.result_within(id, TIMEOUT), &expected, "hello of 5 MB");
    let list: Vec<u64> = (0..300_000).collect();
    let id = s.call("sumMany", json!({"_1": list}));
    let sum: u64 = list.iter().sum();
    assert_exact(
        &s.result_within(id, TIMEOUT),
        &sum.to_string(),
        "sumMany of 300k",
    );
    assert_eq!(s.finish(), 0);
}
