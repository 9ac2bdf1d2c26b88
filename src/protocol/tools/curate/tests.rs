//! Unit tests of tools files: parsing, every error naming its place, and the
//! curated surface answering calls under the new names.

use serde_json::{json, Value};

use super::*;
use crate::format::manifest::Manifest;
use crate::protocol::args;
use crate::protocol::tools;

const SHAPES: &str = include_str!("../../../../tests/data/shapes/manifest.json");

fn shapes() -> (Manifest, Surface) {
    let manifest = Manifest::from_json(SHAPES, &mut Vec::new()).unwrap();
    let surface = tools::build(&manifest);
    (manifest, surface)
}

fn curated(file: Value) -> Result<Surface, CurateError> {
    let (manifest, mut surface) = shapes();
    let curation = parse(&file.to_string())?;
    apply(&mut surface, &manifest, &curation)?;
    Ok(surface)
}

#[track_caller]
fn fails(file: Value, at: &str, message: &str) {
    match curated(file) {
        Ok(_) => panic!("accepted"),
        Err(e) => assert_eq!((e.at.as_str(), e.message.as_str()), (at, message)),
    }
}

fn call_args(surface: &Surface, params: Value) -> Result<String, String> {
    match args::resolve(surface, Some(&params)) {
        Ok(call) => Ok(serde_json::to_string(&call.args).unwrap()),
        Err(e) => Err(e.message),
    }
}

#[test]
fn a_curated_tool_is_renamed_titled_hinted_and_its_argument_too() {
    let surface = curated(json!({"tools": {"addOne": {
        "name": "add_one",
        "title": "Add one",
        "description": "Adds one to a whole number.",
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": null},
        "arguments": {"_1": {"name": "n", "description": "The number."}}
    }}}))
    .unwrap();
    let tool = surface.find("add_one").unwrap();
    assert_eq!(
        tool.json.to_string(),
        r#"{"name":"add_one","title":"Add one","description":"Adds one to a whole number.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","description":"The number."}},"required":["n"],"additionalProperties":false},"annotations":{"title":"Add one","readOnlyHint":true,"idempotentHint":true}}"#
    );
    assert_eq!(tool.modern_json["annotations"], tool.json["annotations"]);
    assert_eq!(tool.modern_json["name"], "add_one");
    assert!(surface.find("addOne").is_none());
    assert_eq!(
        call_args(&surface, json!({"name": "add_one", "arguments": {"n": 41}})),
        Ok("[41]".into())
    );
    assert_eq!(
        call_args(
            &surface,
            json!({"name": "add_one", "arguments": {"_1": 41}})
        ),
        Err("unknown argument '_1' (the arguments of 'add_one': n)".into())
    );
}

#[test]
fn record_fields_options_and_whole_records_take_new_names() {
    let surface = curated(json!({"tools": {
        "configFlat": {"arguments": {"numThreads": {"name": "threads"}}},
        "configWhole": {"arguments": {"configwhole": {"name": "settings"}}},
        "scale": {"arguments": {"factor": {"name": "by"}}}
    }}))
    .unwrap();
    assert_eq!(
        call_args(
            &surface,
            json!({"name": "configFlat", "arguments": {"threads": 4}})
        ),
        Ok(r#"[{"tmpDir":"/tmp","numThreads":4,"removeCaches":false}]"#.into())
    );
    assert_eq!(
        call_args(
            &surface,
            json!({"name": "configWhole", "arguments": {"settings": {"tmpDir": "/x", "numThreads": 2, "removeCaches": true}}})
        ),
        Ok(r#"[{"tmpDir":"/x","numThreads":2,"removeCaches":true}]"#.into())
    );
    assert_eq!(
        call_args(
            &surface,
            json!({"name": "scale", "arguments": {"_1": 5, "by": 3}})
        ),
        Ok("[5,3]".into())
    );
    let flat = surface.find("configFlat").unwrap();
    let props: Vec<&String> = flat.json["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(props, ["tmpDir", "threads", "removeCaches"]);
}

#[test]
fn a_hidden_tool_is_neither_listed_nor_callable() {
    let (_, before) = shapes();
    let surface = curated(json!({"tools": {"slowEcho": {"hidden": true}}})).unwrap();
    assert_eq!(surface.tools.len(), before.tools.len() - 1);
    assert!(surface.find("slowEcho").is_none());
    assert!(call_args(
        &surface,
        json!({"name": "slowEcho", "arguments": {"_1": 1}})
    )
    .is_err());
}

#[test]
fn the_template_changes_nothing_until_edited() {
    let (manifest, mut surface) = shapes();
    let before: Vec<Value> = surface.tools.iter().map(|t| t.json.clone()).collect();
    let file = template(&surface, &manifest);
    assert_eq!(
        file["tools"]["addOne"]["annotations"]["readOnlyHint"],
        Value::Null
    );
    assert_eq!(file["tools"]["addOne"]["scopes"], Value::Null);
    assert_eq!(
        file["tools"]["configFlat"]["arguments"]["numThreads"]["description"],
        "Worker thread count (default: 1)"
    );
    let curation = parse(&file.to_string()).unwrap();
    apply(&mut surface, &manifest, &curation).unwrap();
    let after: Vec<Value> = surface.tools.iter().map(|t| t.json.clone()).collect();
    assert_eq!(before, after);
}

#[test]
fn what_the_program_does_not_have_is_named_with_the_choices() {
    fails(
        json!({"tools": {"addOen": {}}}),
        "tools.addOen",
        "the program has no command 'addOen' (its tools: addOne, sumMany, scale, maybeDouble, hello, configFlat, configWhole, mkResult, noisyAdd, scaleReal, sumPoints, swapPair, mapInc, bigList, bigText, pyFail, slowEcho, pureAnswer, mustFail)",
    );
    fails(
        json!({"tools": {"scale": {"arguments": {"factr": {"description": "x"}}}}}),
        "tools.scale.arguments.factr",
        "tool 'scale' has no argument 'factr' (its arguments: _1, factor)",
    );
    fails(
        json!({"tools": {"scale": {"arguments": {"factor": {"name": "_1"}}}}}),
        "tools.scale.arguments.factor.name",
        "tool 'scale' already has an argument '_1'",
    );
    fails(
        json!({"tools": {"addOne": {"name": "hello"}}}),
        "tools.hello",
        "two tools would be named 'hello' (commands 'addOne' and 'hello')",
    );
}

#[test]
fn a_malformed_file_is_refused_where_it_is_wrong() {
    let bad = |text: &str, at: &str, message: &str| match parse(text) {
        Ok(c) => panic!("accepted as {c:?}"),
        Err(e) => assert_eq!((e.at.as_str(), e.message.as_str()), (at, message), "{text}"),
    };
    bad(
        "{",
        "",
        "not valid JSON: EOF while parsing an object at line 1 column 1",
    );
    bad("[]", "", "must be an object, not an array");
    bad("{}", "", "missing key 'tools'");
    bad(
        r#"{"tool": {}}"#,
        "tool",
        "unknown key \"tool\" (expected one of: module, tools)",
    );
    bad(
        r#"{"tools": {"a": {"hiden": true}}}"#,
        "tools.a.hiden",
        "unknown key \"hiden\" (expected one of: name, title, description, hidden, annotations, scopes, arguments)",
    );
    bad(
        r#"{"tools": {"a": {"annotations": {"readOnly": true}}}}"#,
        "tools.a.annotations.readOnly",
        "unknown key \"readOnly\" (expected one of: readOnlyHint, destructiveHint, idempotentHint, openWorldHint)",
    );
    bad(
        r#"{"tools": {"a": {"annotations": {"readOnlyHint": "yes"}}}}"#,
        "tools.a.annotations.readOnlyHint",
        "must be a boolean or null, not a string",
    );
    bad(
        r#"{"tools": {"a": {"title": 3}}}"#,
        "tools.a.title",
        "must be a string or null, not a number",
    );
    bad(
        r#"{"tools": {"a": {"name": "add one"}}}"#,
        "tools.a.name",
        "'add one' is not a valid tool name (1 to 128 characters of A-Z, a-z, 0-9, '_', '-', '.')",
    );
    bad(
        r#"{"tools": {"a": {"arguments": {"_1": {"name": "_render"}}}}}"#,
        "tools.a.arguments._1.name",
        "'_render' is reserved for the output projection",
    );
}

#[test]
fn a_refused_file_leaves_the_surface_as_it_was() {
    let (manifest, mut surface) = shapes();
    let before: Vec<Value> = surface.tools.iter().map(|t| t.json.clone()).collect();
    let curation =
        parse(&json!({"tools": {"addOne": {"name": "plus"}, "nope": {}}}).to_string()).unwrap();
    assert!(apply(&mut surface, &manifest, &curation).is_err());
    let after: Vec<Value> = surface.tools.iter().map(|t| t.json.clone()).collect();
    assert_eq!(before, after);
}

#[test]
fn scopes_are_kept_per_tool_once_each_and_checked_as_oauth_scope_tokens() {
    let surface = curated(json!({"tools": {
        "addOne": {"name": "add_one", "scopes": ["mcp:math", "tools/add", "mcp:math"]},
        "hello": {"scopes": null},
        "scale": {"scopes": []}
    }}))
    .unwrap();
    let scopes = |name: &str| {
        surface
            .tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .scopes
            .clone()
    };
    assert_eq!(scopes("add_one"), ["mcp:math", "tools/add"]);
    assert!(scopes("hello").is_empty() && scopes("scale").is_empty());
    assert!(scopes("sumMany").is_empty());
    // Scopes say who may call; the advertised tool is unchanged.
    let plain = shapes().1;
    assert_eq!(surface.tools[1].json, plain.tools[1].json);
    let bad = |text: &str, at: &str, message: &str| match parse(text) {
        Ok(c) => panic!("accepted as {c:?}"),
        Err(e) => assert_eq!((e.at.as_str(), e.message.as_str()), (at, message), "{text}"),
    };
    let rule = "is not a valid OAuth scope (one or more printable ASCII characters, no space, '\"' or '\\')";
    bad(
        r#"{"tools": {"addOne": {"scopes": ["ok", "two words"]}}}"#,
        "tools.addOne.scopes[1]",
        &format!("\"two words\" {rule}"),
    );
    for scope in ["", "a\\\"b", "a\\\\b", "caf\u{e9}", "tab\\t"] {
        let text = format!(r#"{{"tools": {{"addOne": {{"scopes": ["{scope}"]}}}}}}"#);
        let err = parse(&text).unwrap_err();
        assert_eq!(err.at, "tools.addOne.scopes[0]", "{text}");
        assert!(err.message.ends_with(rule), "{text}: {}", err.message);
    }
    bad(
        r#"{"tools": {"addOne": {"scopes": "mcp:math"}}}"#,
        "tools.addOne.scopes",
        "must be an array of strings or null, not a string",
    );
    bad(
        r#"{"tools": {"addOne": {"scopes": [1]}}}"#,
        "tools.addOne.scopes[0]",
        "must be a string, not a number",
    );
    // Every printable ASCII character but space, '"' and '\' is allowed.
    let all: String = ('\x21'..='\x7e')
        .filter(|c| !matches!(c, '"' | '\\'))
        .collect();
    let file = json!({"tools": {"addOne": {"scopes": [all]}}});
    assert_eq!(parse(&file.to_string()).unwrap().tools[0].1.scopes, [all]);
}

#[test]
fn a_module_name_alone_or_with_tools() {
    let alone = curated(json!({"module": "calc"})).unwrap();
    assert_eq!(alone.module.as_deref(), Some("calc"));
    assert_eq!(alone.tools.len(), shapes().1.tools.len());
    let both =
        curated(json!({"module": "calc-2", "tools": {"addOne": {"name": "add_one"}}})).unwrap();
    assert_eq!(both.module.as_deref(), Some("calc-2"));
    assert_eq!(curated(json!({"tools": {}})).unwrap().module, None);
    for bad in ["", "a__b", "a b", "a.b"] {
        fails(
            json!({"module": bad}),
            "module",
            &format!("'{bad}' is not a valid module name (1 to 64 characters of A-Z, a-z, 0-9, '_', '-', without '__')"),
        );
    }
    fails(json!({}), "", "missing key 'tools'");
}
