//! The W3C parser's cases: the valid forms, and every way to be invalid.

use super::*;
use serde_json::json;

const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

#[test]
fn a_version_00_traceparent_is_read() {
    let p = parse_traceparent(GOOD).unwrap();
    assert_eq!(hex(&p.trace_id), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(hex(&p.parent_id), "b7ad6b7169203331");
    assert_eq!(p.flags, 1);
}

#[test]
fn invalid_traceparents_are_refused() {
    let cases = [
        "",
        "00",
        // uppercase hex
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0A",
        // all-zero ids
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        // version ff, bad version digits
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        // lengths
        "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        // separators
        "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319cxb7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331x01",
        // non-hex
        "00-0af7651916cd43dd8448eb211c80319z-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333é-01",
        // a later version must not run on into more text without a dash
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
    ];
    for case in cases {
        assert_eq!(parse_traceparent(case), None, "{case:?}");
    }
}

#[test]
fn a_later_version_is_read_by_its_prefix() {
    let later = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes";
    let p = parse_traceparent(later).unwrap();
    assert_eq!(hex(&p.parent_id), "b7ad6b7169203331");
    assert!(parse_traceparent(&later[..55]).is_some());
}

#[test]
fn tracestate_lists_are_checked() {
    for ok in [
        "congo=t61rcWkgMzE",
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
        " a=1 ,\tb=2 , ,",
        "tenant1@vendor=x y",
        "1tenant@sys=v",
        "",
    ] {
        assert!(valid_tracestate(ok), "{ok:?}");
    }
    let too_many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
    let too_long = format!("k={}", "v".repeat(600));
    for bad in [
        "novalue",
        "Upper=1",
        "k=",
        "k=a,b",
        "k=a=b",
        "k=a\tb",
        "1key=v",
        "k=\u{7f}",
        "a@b@c=1",
        &too_many.join(","),
        &too_long,
    ] {
        assert!(!valid_tracestate(bad), "{bad:?}");
    }
}

#[test]
fn the_context_comes_from_meta_and_drops_what_is_invalid() {
    let params = json!({"_meta": {"traceparent": GOOD, "tracestate": "congo=1"}});
    let got = Incoming::from_params(Some(&params));
    assert_eq!(got.parent, parse_traceparent(GOOD));
    assert_eq!(got.state.as_deref(), Some("congo=1"));
    // A tracestate without a valid traceparent is dropped, and so is a bad one.
    let params = json!({"_meta": {"traceparent": "00-bad", "tracestate": "congo=1"}});
    assert_eq!(Incoming::from_params(Some(&params)), Incoming::default());
    let params = json!({"_meta": {"traceparent": GOOD, "tracestate": "Bad"}});
    assert_eq!(Incoming::from_params(Some(&params)).state, None);
    // Non-strings and missing `_meta` give nothing.
    let params = json!({"_meta": {"traceparent": 7}});
    assert_eq!(Incoming::from_params(Some(&params)), Incoming::default());
    assert_eq!(Incoming::from_params(None), Incoming::default());
}

#[test]
fn spans_continue_the_callers_trace_or_start_one() {
    let incoming = Incoming::from_values(Some(GOOD), None);
    let span = Span::start(incoming, [9; 16], [7; 8]);
    assert_eq!(hex(&span.trace_id), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(
        span.parent_id.map(|p| hex(&p)).as_deref(),
        Some("b7ad6b7169203331")
    );
    assert_eq!(span.span_id, [7; 8]);
    let child = span.child([5; 8]);
    assert_eq!(
        (child.trace_id, child.parent_id),
        (span.trace_id, Some([7; 8]))
    );
    let root = Span::start(Incoming::default(), [0; 16], [0; 8]);
    assert_eq!(root.parent_id, None);
    assert_ne!(root.trace_id, [0; 16]);
    assert_ne!(root.span_id, [0; 8]);
}
