//! Large-argument decoding: for a schema made from the leading bytes and
//! any JSON text (the rest), encoding the text straight to voidstar
//! (`voidstar::text`) gives the bytes or the error of the typed path
//! (`value::from_json`, then `voidstar::encode_flat`), and invalid JSON is
//! refused as serde_json refuses it; the same encoding in slices of a
//! budget taken from the input (`text::Sliced`) gives the same outcome. The
//! same text as a `tools/call`'s arguments, and the text as a whole
//! message, and as the id and a `params` member of a request (which is
//! read in place, not parsed), decode lazily (`jsonrpc::decode_lazy`) to
//! the message the full decode gives, and so does a body checked in slices
//! (`json::check::Checker`, then `jsonrpc::decode_checked`); a plain
//! `tools/call` read in one walk (`jsonrpc::decode_call`) gives the same
//! message and its arguments' members where a walk of them finds them. The
//! text as
//! a tool's text result is written straight (`mcp::TextResult::write`) as
//! its message is written from a tree.
//!
//! Input: bytes up to the first `\n` pick the schema (see `schema`), the
//! rest is the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::format::json::check::Checker;
use morloc_mcp::format::json::scan::{self, ScanError};
use morloc_mcp::format::schema;
use morloc_mcp::format::value::{self, Layout, ValueError, ValueErrorKind};
use morloc_mcp::format::voidstar::{self, text};
use morloc_mcp::protocol::jsonrpc::{self, Incoming};
use morloc_mcp::protocol::mcp;

/// A schema string from `bytes`: one node per byte, children after their
/// parent, leaves once the bytes or the depth run out.
fn schema(bytes: &mut std::slice::Iter<'_, u8>, depth: usize) -> String {
    let Some(&b) = bytes.next() else {
        return "i4".into();
    };
    let leaf = depth >= 4;
    match b % 18 {
        0 => "i4".into(),
        1 => "u1".into(),
        2 => "i8".into(),
        3 | 4 => "j".into(),
        5 => "f8".into(),
        6 => "f4".into(),
        7 => "s".into(),
        8 => "b".into(),
        9 => "z".into(),
        10 => "F".into(),
        11 if !leaf => format!("a{}", schema(bytes, depth + 1)),
        12 if !leaf => format!("?{}", schema(bytes, depth + 1)),
        13 if !leaf => format!("t2{}{}", schema(bytes, depth + 1), schema(bytes, depth + 1)),
        14 if !leaf => format!("m21x{}1y{}", schema(bytes, depth + 1), schema(bytes, depth + 1)),
        15 if !leaf => format!("a:2{}", schema(bytes, depth + 1)),
        16 => "&1Lm21vj1n?^1L".into(),
        17 => "&1Ta?m21vs1c^1T".into(),
        _ => "j".into(),
    }
}

fn serde_verdict(text: &str) -> Result<serde_json::Value, ScanError> {
    serde_json::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            ScanError::TooDeep
        } else {
            ScanError::Syntax
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let Ok(json) = std::str::from_utf8(data.get(split + 1..).unwrap_or(&[])) else {
        return;
    };
    let text_schema = schema(&mut data[..split].iter(), 0);
    let Ok(schema) = schema::parse(&text_schema) else {
        return;
    };
    let streamed = match Layout::new(&schema) {
        Ok(layout) => text::encode_text(&layout, json, "x"),
        Err(e) => Err(text::TextError::Value(ValueError {
            path: "x".into(),
            kind: ValueErrorKind::Schema(e.0),
        })),
    };
    let budget = 1 + usize::from(data.first().copied().unwrap_or(0) % 29);
    if let Ok(layout) = Layout::new(&schema) {
        if scan::validate(json.as_bytes(), 0).is_ok() {
            let one_shot = text::encode_text(&layout, json, "x");
            assert_eq!(sliced(&layout, json, budget), one_shot, "{text_schema} {json} by {budget}");
        }
    }
    match serde_verdict(json) {
        Err(kind) => {
            assert_eq!(streamed, Err(text::TextError::Json(kind)), "{text_schema} {json}");
            assert_eq!(scan::validate(json.as_bytes(), 0), Err(kind));
        }
        Ok(tree) => {
            let typed = value::from_json(&schema, &tree, "x")
                .map_err(|e| e.to_string())
                .and_then(|v| voidstar::encode_flat(&schema, &v).map_err(|e| e.to_string()));
            assert_eq!(streamed.map_err(|e| e.to_string()), typed, "{text_schema} {json}");
        }
    }
    // The same text as a call's arguments, in an envelope, and as a whole
    // message.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"a":{json}}}}}}}"#
    );
    lazy_agrees(line.as_bytes(), budget);
    // As the id and a member of `params` beside the arguments: a request is
    // read in place (ids, duplicate keys, escapes) as the parse reads it.
    let request = format!(
        r#"{{"id":{json},"method":"tools/call","params":{{"arguments":{{}},"x":{json}}},"\u0069d":{json}}}"#
    );
    lazy_agrees(request.as_bytes(), budget);
    // As a plain call's name and arguments, in either order.
    let plain = format!(
        r#"{{"id":2,"method":"tools/call","params":{{"arguments":{{"a":{json},"b":1}},"name":{json}}}}}"#
    );
    lazy_agrees(plain.as_bytes(), budget);
    // As the fields of a modern call's `_meta`: read in place, the meta the
    // parsed `_meta` gives, whenever it is read in place at all.
    let modern = format!(
        r#"{{"id":3,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":{json},"io.modelcontextprotocol/clientCapabilities":{json},"io.modelcontextprotocol/logLevel":{json}}},"arguments":{{}}}}}}"#
    );
    lazy_agrees(modern.as_bytes(), budget);
    meta_agrees(modern.as_bytes());
    let modern = format!(
        r#"{{"id":3,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{json}}},"arguments":{{}}}}}}"#
    );
    meta_agrees(modern.as_bytes());
    lazy_agrees(json.as_bytes(), budget);
    lazy_agrees(data, budget);
    text_result_written(json);
});

/// The text as a tool's text result: written straight from the text, the
/// bytes (and length) of its message written from the tree, in both eras.
fn text_result_written(text: &str) {
    let info = r#"{"name":"n","version":"v"}"#;
    for structured in [None, Some(false), Some(true)] {
        for modern in [false, true] {
            let result = mcp::TextResult { text: text.to_string(), structured };
            let mut direct = Vec::new();
            result.write(&mut direct, modern, info);
            assert_eq!(result.length(modern, info), direct.len());
            let mut tree = result.into_json();
            mcp::structured::for_era(&mut tree, modern);
            if modern {
                tree = mcp::complete_with(tree, serde_json::from_str(info).unwrap());
            }
            let written = mcp::structured::to_vec(&tree);
            assert_eq!(direct, written, "{text:?} {structured:?} {modern}");
        }
    }
}

/// `encode_text` through `text::Sliced`, `budget` units per step.
fn sliced(layout: &Layout, json: &str, budget: usize) -> Result<Vec<u8>, text::TextError> {
    let mut enc = text::Sliced::new();
    loop {
        let mut left = budget;
        if enc.plan_step(layout, json.as_bytes(), "x", &mut left).map_err(text::TextError::Value)? {
            break;
        }
    }
    if let Some(e) = enc.encode_error() {
        return Err(text::TextError::Encode(e.clone()));
    }
    let mut out = vec![1, 2, 3];
    loop {
        let mut left = budget;
        if enc.write_step(layout, json.as_bytes(), &mut out, &mut left) {
            return Ok(out.split_off(3));
        }
    }
}

/// A `_meta` read in place gives the meta the parsed one gives, when it
/// gives one.
fn meta_agrees(line: &[u8]) {
    let jsonrpc::Decoded::Call(call) = jsonrpc::decode_call(line) else {
        return;
    };
    let Some(members) = call.meta() else {
        return;
    };
    let Some(meta) = mcp::era::meta_in_place(members, false) else {
        return;
    };
    let (Incoming::Request { id, params, .. }, _) = call.into_message() else {
        panic!("a call read in place is a request");
    };
    assert_eq!(mcp::era::request_meta(&id, params.as_ref()), Ok(meta));
}

/// Lazy decoding gives the full decode's message, with the arguments object
/// split off as its text exactly when there is one.
fn lazy_agrees(line: &[u8], budget: usize) {
    let full = jsonrpc::decode(line);
    let (lazy, arguments) = jsonrpc::decode_lazy(line);
    // Checked in slices of `budget` bytes, then decoded: the same.
    let mut checker = Checker::default();
    let verdict = loop {
        if let Some(verdict) = checker.step(line, budget) {
            break verdict;
        }
    };
    let ends = checker.ends();
    let checked = jsonrpc::decode_checked(line, &verdict, checker.span(), &ends);
    assert_eq!(checked, (lazy.clone(), arguments));
    // Read in one walk: a plain call's parts are the message's, its
    // members those a walk of its arguments finds.
    match jsonrpc::decode_call(line) {
        jsonrpc::Decoded::Message(msg, args) => assert_eq!((msg, args), (lazy.clone(), arguments)),
        jsonrpc::Decoded::Call(call) => {
            let text = call.arguments.as_bytes();
            let members: Vec<_> = scan::members(text, 0)
                .map(|(key, value)| (key, value..scan::value_end(text, value)))
                .collect();
            assert_eq!(call.members, members);
            let (msg, args) = call.into_message();
            assert_eq!((msg, Some(args)), (lazy.clone(), arguments));
        }
    }
    match arguments {
        None => assert_eq!(lazy, full),
        Some(arguments) => {
            let Incoming::Request { id, method, params: Some(mut params) } = full else {
                panic!("arguments split off a message that is not a request");
            };
            let parsed: serde_json::Value =
                serde_json::from_str(arguments).expect("split-off arguments are JSON");
            assert_eq!(params["arguments"], parsed);
            params["arguments"] = serde_json::Value::Null;
            assert_eq!(lazy, Incoming::Request { id, method, params: Some(params) });
        }
    }
}
