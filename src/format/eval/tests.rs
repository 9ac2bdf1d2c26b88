//! Unit tests of the `eval` module (kept apart: the module itself is long enough).

use std::collections::BTreeMap;

use serde_json::json;

use super::compile::parse_decimal;
use super::*;

/// Files in memory.
#[derive(Default)]
struct MemHost {
    files: BTreeMap<String, Vec<u8>>,
}

impl Host for MemHost {
    fn read_file(&mut self, path: &str, limit: u64) -> io::Result<Vec<u8>> {
        let bytes = self
            .files
            .get(path)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        if bytes.len() as u64 > limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        Ok(bytes.clone())
    }

    fn write_file_atomic(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.files.insert(path.to_string(), bytes.to_vec());
        Ok(())
    }
}

mod intrinsics;
mod patterns;

// Tree builders, named after the node tags.

fn lit(t: &str, v: &str) -> Json {
    json!({"tag": "lit", "schema": t, "lit_type": t, "value": v})
}

fn int(n: i64) -> Json {
    lit("j", &n.to_string())
}

fn s(v: &str) -> Json {
    json!({"tag": "str", "schema": "s", "value": v})
}

fn bound(var: &str, schema: &str) -> Json {
    json!({"tag": "bound", "schema": schema, "var": var})
}

fn app(schema: &str, func: Json, args: Vec<Json>) -> Json {
    json!({"tag": "app", "schema": schema, "func": func, "args": args})
}

fn lambda(vars: &[&str], body: Json) -> Json {
    json!({"tag": "lambda", "vars": vars, "body": body})
}

/// `let var = value in body`, as the compiler emits it.
fn let_in(var: &str, value: Json, schema: &str, body: Json) -> Json {
    app(schema, lambda(&[var], body), vec![value])
}

fn container(schema: &str, elements: Vec<Json>) -> Json {
    json!({"tag": "container", "schema": schema, "elements": elements})
}

fn interpolation(strings: &[&str]) -> Json {
    json!({"tag": "interpolation", "schema": "s", "strings": strings})
}

fn pattern(schema: &str, p: Json) -> Json {
    json!({"tag": "pattern", "schema": schema, "pattern": p})
}

fn end() -> Json {
    json!({"type": "end"})
}

fn key(sels: Vec<(&str, Json)>) -> Json {
    let sels: Vec<Json> = sels
        .into_iter()
        .map(|(k, sub)| json!({"key": k, "sub": sub}))
        .collect();
    json!({"type": "key", "selectors": sels})
}

fn idx(sels: Vec<(usize, Json)>) -> Json {
    let sels: Vec<Json> = sels
        .into_iter()
        .map(|(i, sub)| json!({"index": i, "sub": sub}))
        .collect();
    json!({"type": "idx", "selectors": sels})
}

fn unary(tag: &str, schema: &str, child: Json) -> Json {
    json!({"tag": tag, "schema": schema, "child": child})
}

fn throw(msg: Json) -> Json {
    json!({"tag": "throw", "msg": msg})
}

fn catch(fallible: Json, fallback: Json) -> Json {
    json!({"tag": "catch", "fallible": fallible, "fallback": fallback})
}

fn if_(schema: &str, cond: Json, then: Json, otherwise: Json) -> Json {
    json!({"tag": "if", "schema": schema, "cond": cond, "then": then, "else": otherwise})
}

fn none() -> Json {
    container("?j", vec![])
}

fn some(n: i64) -> Json {
    container("?j", vec![int(n)])
}

fn parse_schema(text: &str) -> Schema {
    schema::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn arg(schema: &str, json: &str) -> (Schema, Value) {
    let schema = parse_schema(schema);
    let json: Json = serde_json::from_str(json).unwrap();
    let value = codec::from_json(&schema, &json).unwrap();
    (schema, value)
}

/// Runs `expr` and renders the outcome: the result as JSON text, or the
/// error as `<kind>: <message>`.
fn outcome(
    expr: &Json,
    args: &[(&str, &str)],
    ret: &str,
    host: &mut MemHost,
    limits: Limits,
) -> String {
    let compiled = compile(expr).unwrap_or_else(|e| panic!("compile failed: {e}"));
    let (schemas, values): (Vec<Schema>, Vec<Value>) = args.iter().map(|(s, j)| arg(s, j)).unzip();
    let ret = parse_schema(ret);
    match run_with_limits(&compiled, &schemas, values, &ret, host, limits) {
        Ok(value) => codec::to_json(&ret, &value).unwrap_or_else(|e| format!("render error: {e}")),
        Err(e) => format!("{:?}: {}", e.kind, e.message),
    }
}

#[track_caller]
fn check(expr: Json, args: &[(&str, &str)], ret: &str, want: &str) {
    let got = outcome(&expr, args, ret, &mut MemHost::default(), Limits::default());
    assert_eq!(got, want, "{expr}");
}

#[track_caller]
fn check_value(expr: Json, ret: &str, want: Value) {
    let compiled = compile(&expr).unwrap_or_else(|e| panic!("compile failed: {e}"));
    let got = run(&compiled, &[], vec![], &parse_schema(ret), &mut NoFiles);
    assert_eq!(got, Ok(want), "{expr}");
}

#[track_caller]
fn check_malformed(expr: Json, want: &str) {
    match compile(&expr) {
        Ok(_) => panic!("{expr} compiled"),
        Err(e) => {
            assert_eq!(e.kind, EvalErrorKind::Malformed);
            assert_eq!(e.message, want, "{expr}");
        }
    }
}

#[test]
fn literals() {
    check(lit("i1", "-128"), &[], "i1", "-128");
    check(lit("i2", "32767"), &[], "i2", "32767");
    check(lit("i4", "42"), &[], "i4", "42");
    check(
        lit("i8", "-9223372036854775808"),
        &[],
        "i8",
        "-9223372036854775808",
    );
    check(lit("u1", "255"), &[], "u1", "255");
    check(lit("u2", "65535"), &[], "u2", "65535");
    check(lit("u4", "7"), &[], "u4", "7");
    check(
        lit("u8", "18446744073709551615"),
        &[],
        "u8",
        "18446744073709551615",
    );
    check(lit("j", "42"), &[], "j", "42");
    check(lit("b", "1"), &[], "b", "true");
    check(lit("b", "0"), &[], "b", "false");
    check(lit("b", "yes"), &[], "b", "true");
    check(lit("z", "ignored"), &[], "z", "null");
    check(
        json!({"tag": "lit", "schema": "<int>i4", "lit_type": "i4", "value": "5"}),
        &[],
        "i4",
        "5",
    );
    // A missing value reads as "0", as in the reference.
    check(
        json!({"tag": "lit", "schema": "i4", "lit_type": "i4"}),
        &[],
        "i4",
        "0",
    );
    check_value(lit("f8", "2.5"), "f8", Value::Float(2.5));
    check_value(lit("f8", "inf"), "f8", Value::Float(f64::INFINITY));
    check_value(lit("f8", "-inf"), "f8", Value::Float(f64::NEG_INFINITY));
    check_value(lit("f4", "0.1"), "f4", Value::Float(0.1f32 as f64));
    check_value(
        lit("j", "-1"),
        "j",
        Value::BigInt(BigInt {
            limbs: vec![u64::MAX],
        }),
    );
    let nan = run(
        &compile(&lit("f8", "nan")).unwrap(),
        &[],
        vec![],
        &Schema::Float { bytes: 8 },
        &mut NoFiles,
    );
    assert!(matches!(nan, Ok(Value::Float(f)) if f.is_nan()));
}

#[test]
fn decimal_parsing_gives_minimal_limbs() {
    let cases: &[(&str, &[u64])] = &[
        ("0", &[0]),
        ("-0", &[0]),
        ("42", &[42]),
        ("-1", &[u64::MAX]),
        ("9223372036854775807", &[i64::MAX as u64]),
        ("9223372036854775808", &[1 << 63, 0]),
        ("-9223372036854775808", &[1 << 63]),
        ("-9223372036854775809", &[(1 << 63) - 1, u64::MAX]),
        ("18446744073709551616", &[0, 1]),
        ("-18446744073709551616", &[0, u64::MAX]),
        ("-18446744073709551615", &[1, u64::MAX]),
        ("340282366920938463463374607431768211456", &[0, 0, 1]),
    ];
    for (text, limbs) in cases {
        assert_eq!(
            parse_decimal(text),
            Some(BigInt {
                limbs: limbs.to_vec()
            }),
            "{text}"
        );
    }
    for bad in ["", "-", "12a", "1.5", "+1", " 1"] {
        assert_eq!(parse_decimal(bad), None, "{bad:?}");
    }
}

#[test]
fn malformed_trees_fail_to_compile() {
    check_malformed(json!({}), "Expression missing 'tag' field");
    check_malformed(json!(null), "Expression missing 'tag' field");
    check_malformed(json!({"tag": 3}), "Expression missing 'tag' field");
    check_malformed(
        json!({"tag": "frobnicate"}),
        "Unknown expression tag: frobnicate",
    );
    check_malformed(lit("i1", "300"), "invalid i1 literal \"300\"");
    check_malformed(lit("u1", "-1"), "invalid u1 literal \"-1\"");
    check_malformed(lit("f8", "abc"), "invalid f8 literal \"abc\"");
    check_malformed(lit("j", "12a"), "invalid j literal \"12a\"");
    check_malformed(lit("j", ""), "invalid j literal \"\"");
    check_malformed(
        json!({"tag": "lit", "schema": "s", "lit_type": "s", "value": "x"}),
        "Unknown lit_type: s",
    );
    check_malformed(
        json!({"tag": "lit", "schema": "j", "lit_type": "i4", "value": "1"}),
        "lit schema \"j\" does not match lit_type \"i4\"",
    );
    check_malformed(
        json!({"tag": "lit", "schema": "", "lit_type": "i4", "value": "1"}),
        "schema error: unexpected end of schema in \"\"",
    );
    check_malformed(
        json!({"tag": "str", "schema": "j", "value": "x"}),
        "str literal schema \"j\" is not a string",
    );
    check_malformed(
        container("i4", vec![]),
        "Container schema is not a container type",
    );
    check_malformed(
        container("t2jj", vec![int(1)]),
        "container of schema \"t2jj\" has 1 elements, expected 2",
    );
    check_malformed(
        container("m11xj", vec![]),
        "container of schema \"m11xj\" has 0 elements, expected 1",
    );
    check_malformed(
        container("?j", vec![int(1), int(2)]),
        "optional container has 2 elements, expected 0 or 1",
    );
    check_malformed(
        app("j", int(1), vec![]),
        "Invalid function in app expression (type=lit)",
    );
    check_malformed(
        app("j", bound("f", "j"), vec![]),
        "Invalid function in app expression (type=bound)",
    );
    check_malformed(
        json!({"tag": "app", "schema": "j", "args": []}),
        "Expression missing 'tag' field",
    );
    check_malformed(
        json!({"tag": "lambda", "vars": ["x"]}),
        "Expression missing 'tag' field",
    );
    check_malformed(pattern("j", json!({})), "Pattern missing 'type' field");
    check_malformed(
        pattern("j", json!({"type": "star"})),
        "Unknown pattern type: star",
    );
    check_malformed(
        pattern("j", key(vec![("x", json!(null))])),
        "Pattern missing 'type' field",
    );
    check_malformed(
        pattern("j", json!({"type": "bracket_index", "sub": null})),
        "Pattern missing 'type' field",
    );
    check_malformed(
        json!({"tag": "map", "schema": "j", "func": lambda(&["x"], int(1)), "list": int(1)}),
        "map schema \"j\" is not a list",
    );
    check_malformed(
        json!({"tag": "if", "schema": "j", "cond": lit("b", "1"), "then": int(1)}),
        "Expression missing 'tag' field",
    );
    check_malformed(
        json!({"tag": "catch", "fallible": int(1)}),
        "Expression missing 'tag' field",
    );
    check_malformed(
        json!({"tag": "open", "schema": "F", "kind": 0}),
        "Expression missing 'tag' field",
    );
    check_malformed(
        json!({"tag": "write", "level": int(0), "value": int(1)}),
        "Expression missing 'tag' field",
    );
    check_malformed(
        json!({"tag": "stdout", "schema": "?"}),
        "schema error: unexpected end of schema in \"?\"",
    );
}

#[test]
fn every_node_tag_compiles() {
    let path = s("/tmp/x");
    let handle = bound("h", "F");
    let nodes = vec![
        lit("j", "1"),
        s("x"),
        container("aj", vec![]),
        app("j", lambda(&["x"], bound("x", "j")), vec![int(1)]),
        lambda(&["x"], int(1)),
        bound("x", "j"),
        interpolation(&["a"]),
        pattern("j", end()),
        json!({"tag": "map", "schema": "aj", "func": lambda(&["x"], int(1)), "list": container("aj", vec![])}),
        if_("j", lit("b", "1"), int(1), int(2)),
        throw(s("x")),
        catch(int(1), int(2)),
        unary("show", "s", int(1)),
        unary("read", "j", s("1")),
        unary("hash", "s", int(1)),
        json!({"tag": "save", "format": "json", "schema": "j", "level": int(0), "value": int(1), "path": path}),
        unary("load", "j", path.clone()),
        json!({"tag": "open", "schema": "F", "kind": 0, "path": path}),
        json!({"tag": "open_ostream", "schema": "aj", "path": path}),
        json!({"tag": "append", "schema": "aj", "path": path}),
        json!({"tag": "close", "handle": handle}),
        json!({"tag": "fschema", "schema": "s", "path": path}),
        json!({"tag": "flen", "schema": "j", "handle": handle}),
        json!({"tag": "ifile_walk", "schema": "j", "handle": handle, "path": ".[]", "args": [some(0)]}),
        json!({"tag": "next", "schema": "aj", "handle": handle}),
        json!({"tag": "streamlayout", "schema": "at3u1u1u1", "handle": handle}),
        json!({"tag": "stream", "schema": "I", "handle": handle}),
        json!({"tag": "write", "schema": "aj", "level": int(0), "value": container("aj", vec![]), "handle": handle}),
        json!({"tag": "concat", "paths": container("as", vec![]), "dest": path}),
        json!({"tag": "flush", "handle": handle}),
        json!({"tag": "stdin", "schema": "aj"}),
        json!({"tag": "stdout", "schema": "aj"}),
        json!({"tag": "stderr", "schema": "aj"}),
    ];
    for node in nodes {
        if let Err(e) = compile(&node) {
            panic!("{node}: {e}");
        }
    }
}

#[test]
fn strings_and_containers() {
    check(s("héllo \u{0}/"), &[], "s", "\"héllo \\u0000/\"");
    check(container("aj", vec![int(1), int(2)]), &[], "aj", "[1,2]");
    check(container("aj", vec![]), &[], "aj", "[]");
    check(
        container("t2js", vec![int(1), s("a")]),
        &[],
        "t2js",
        "[1,\"a\"]",
    );
    // Record elements arrive in schema field order.
    check(
        container("m21yj1xs", vec![int(1), s("a")]),
        &[],
        "m21yj1xs",
        "{\"y\":1,\"x\":\"a\"}",
    );
    check(some(3), &[], "?j", "3");
    check(none(), &[], "?j", "null");
    check(
        container("<list>a<dict>m11xj", vec![container("m11xj", vec![int(1)])]),
        &[],
        "am11xj",
        "[{\"x\":1}]",
    );
}

#[test]
fn application_and_scoping() {
    let pair = |a: Json, b: Json| container("t2jj", vec![a, b]);
    check(
        let_in("x", int(5), "t2jj", pair(bound("x", "j"), bound("x", "j"))),
        &[],
        "t2jj",
        "[5,5]",
    );
    check(
        app(
            "t2jj",
            lambda(&["a", "b"], pair(bound("b", "j"), bound("a", "j"))),
            vec![int(1), int(2)],
        ),
        &[],
        "t2jj",
        "[2,1]",
    );
    // Inner bindings shadow outer ones and end with their lambda; the
    // reference's flat environment would report `x` unbound here.
    let shadow = let_in(
        "x",
        int(1),
        "t2jj",
        pair(let_in("x", int(2), "j", bound("x", "j")), bound("x", "j")),
    );
    check(shadow, &[], "t2jj", "[2,1]");
    // Arguments are evaluated in the caller's scope.
    let args_outside = let_in(
        "x",
        int(1),
        "j",
        app(
            "j",
            lambda(&["x"], bound("x", "j")),
            vec![container("t2jj", vec![int(7), int(8)])],
        ),
    );
    check(args_outside, &[], "t2jj", "[7,8]");
    let escaped = pair(let_in("y", int(1), "j", bound("y", "j")), bound("y", "j"));
    check(escaped, &[], "t2jj", "Internal: Unbound variable y");
    check(
        bound("nope", "j"),
        &[],
        "j",
        "Internal: Unbound variable nope",
    );
    check(
        app("j", lambda(&["a", "b"], int(1)), vec![int(1)]),
        &[],
        "j",
        "Internal: lambda of 2 parameters applied to 1 arguments",
    );
    check(
        lambda(&["a", "b"], bound("b", "s")),
        &[("j", "1"), ("s", "\"x\"")],
        "s",
        "\"x\"",
    );
    check(
        lambda(&["a"], bound("a", "j")),
        &[],
        "j",
        "Internal: lambda of 1 parameters applied to 0 arguments",
    );
    // A non-lambda root ignores the arguments.
    check(int(3), &[("j", "1")], "j", "3");
    check(app("j", interpolation(&["a"]), vec![]), &[], "s", "\"a\"");
    check(
        json!({"tag": "lambda", "vars": ["x"], "body": lambda(&["y"], int(1))}),
        &[("j", "1")],
        "j",
        "Internal: a lambda node can only be applied, not evaluated as a value",
    );
}

#[test]
fn interpolation_concatenates_bytes() {
    let greet = json!({
        "tag": "lambda",
        "vars": ["who"],
        "body": {
            "tag": "app",
            "schema": "s",
            "func": {"tag": "interpolation", "schema": "s", "strings": ["Hello, ", "!"]},
            "args": [{"tag": "bound", "schema": "s", "var": "who"}]
        }
    });
    check(greet, &[("s", "\"Ada\"")], "s", "\"Hello, Ada!\"");
    check(
        app("s", interpolation(&["", "-", ""]), vec![s("a"), s("b")]),
        &[],
        "s",
        "\"a-b\"",
    );
    check(
        app("s", interpolation(&["x\u{0}", ""]), vec![s("")]),
        &[],
        "s",
        "\"x\\u0000\"",
    );
    check(
        app("s", interpolation(&["a", "b"]), vec![int(1)]),
        &[],
        "s",
        "Internal: interpolation argument 0 is not a Str",
    );
    check(
        app("s", interpolation(&["a"]), vec![s("x")]),
        &[],
        "s",
        "Internal: interpolation of 1 strings applied to 1 arguments",
    );
}

fn map(schema: &str, func: Json, list: Json) -> Json {
    json!({"tag": "map", "schema": schema, "func": func, "list": list})
}

#[test]
fn map_applies_a_lambda_to_each_element() {
    let xs = container("aj", vec![int(1), int(2)]);
    let dup = lambda(
        &["x"],
        container("t2jj", vec![bound("x", "j"), bound("x", "j")]),
    );
    check(map("at2jj", dup, xs.clone()), &[], "at2jj", "[[1,1],[2,2]]");
    check(map("aj", int(1), container("aj", vec![])), &[], "aj", "[]");
    check(
        map("aj", int(1), xs.clone()),
        &[],
        "aj",
        "Internal: Map func must be a lambda",
    );
    check(
        map("aj", lambda(&["a", "b"], int(1)), xs.clone()),
        &[],
        "aj",
        "Internal: Map lambda must take exactly one argument",
    );
    check(
        map("aj", lambda(&["x"], int(1)), int(1)),
        &[],
        "aj",
        "Internal: map list is not a list",
    );
    // `.[::-1].x pts`: a reversed slice, then a field of each element.
    let getx = lambda(
        &["p"],
        app(
            "j",
            pattern("j", key(vec![("x", end())])),
            vec![bound("p", "m21xj1yj")],
        ),
    );
    let reversed = app(
        "am21xj1yj",
        pattern("am21xj1yj", json!({"type": "bracket_slice"})),
        vec![none(), none(), some(-1), bound("pts", "am21xj1yj")],
    );
    let body = map("aj", getx, reversed);
    check(
        lambda(&["pts"], body),
        &[("am21xj1yj", "[{\"x\":1,\"y\":2},{\"x\":3,\"y\":4}]")],
        "aj",
        "[3,1]",
    );
}

#[test]
fn if_evaluates_only_the_chosen_branch() {
    check(
        if_("j", lit("b", "1"), int(1), throw(s("no"))),
        &[],
        "j",
        "1",
    );
    check(
        if_("j", lit("b", "0"), throw(s("no")), int(2)),
        &[],
        "j",
        "2",
    );
    check(
        if_("j", lit("b", "1"), throw(s("guard")), int(2)),
        &[],
        "j",
        "User: guard",
    );
    check(
        if_("j", int(1), int(1), int(2)),
        &[],
        "j",
        "Internal: if condition is not a Bool",
    );
    let cond = lambda(&["c"], if_("s", bound("c", "b"), s("yes"), s("no")));
    check(cond.clone(), &[("b", "true")], "s", "\"yes\"");
    check(cond, &[("b", "false")], "s", "\"no\"");
}

#[test]
fn catch_intercepts_only_catchable_errors() {
    check(
        catch(throw(s("boom")), s("fallback")),
        &[],
        "s",
        "\"fallback\"",
    );
    check(catch(s("fine"), throw(s("unused"))), &[], "s", "\"fine\"");
    check(
        catch(bound("nope", "s"), s("fallback")),
        &[],
        "s",
        "Internal: Unbound variable nope",
    );
    check(catch(unary("read", "j", s("")), int(0)), &[], "j", "0");
    check(catch(unary("read", "j", s("[")), int(0)), &[], "j", "0");
    check(
        catch(catch(throw(s("a")), throw(s("b"))), s("c")),
        &[],
        "s",
        "\"c\"",
    );
    check(
        catch(catch(throw(s("a")), throw(s("b"))), throw(s("c"))),
        &[],
        "s",
        "User: c",
    );
    // Bindings made inside the failed branch do not leak into the fallback.
    let inner = let_in("x", s("inner"), "s", throw(bound("x", "s")));
    check(
        let_in("x", s("outer"), "s", catch(inner, bound("x", "s"))),
        &[],
        "s",
        "\"outer\"",
    );
    // The thrown text is kept verbatim, whatever it contains.
    check(
        throw(s("line 1\nline 2: {\"json\"}")),
        &[],
        "s",
        "User: line 1\nline 2: {\"json\"}",
    );
    let err = run(
        &compile(&throw(s("exact text"))).unwrap(),
        &[],
        vec![],
        &Schema::Nil,
        &mut NoFiles,
    )
    .unwrap_err();
    assert!(err.is_catchable());
    assert_eq!(err.to_string(), "exact text");
    check(
        throw(int(1)),
        &[],
        "j",
        "Internal: @throw message is not a Str",
    );
}

#[test]
fn catch_does_not_intercept_limits() {
    let limits = Limits {
        max_depth: 256,
        max_steps: 5,
    };
    let expr = catch(
        container("aj", vec![int(1), int(2), int(3), int(4), int(5)]),
        container("aj", vec![]),
    );
    let got = outcome(&expr, &[], "aj", &mut MemHost::default(), limits);
    assert_eq!(got, "Limit: evaluation step limit exceeded");
}

const REC: &str = "m21xj1ys";

fn getter(p: Json, schema: &str, receiver: &str, ret: &str) -> String {
    outcome(
        &lambda(&["r"], app(ret, pattern(ret, p), vec![bound("r", schema)])),
        &[(schema, receiver)],
        ret,
        &mut MemHost::default(),
        Limits::default(),
    )
}

fn setter(p: Json, schema: &str, receiver: &str, values: &[(&str, &str)]) -> String {
    let mut vars = vec!["r".to_string()];
    let mut args = vec![bound("r", schema)];
    let mut all = vec![(schema, receiver)];
    for (i, (vs, vj)) in values.iter().enumerate() {
        vars.push(format!("v{i}"));
        args.push(bound(&format!("v{i}"), vs));
        all.push((vs, vj));
    }
    let vars: Vec<&str> = vars.iter().map(String::as_str).collect();
    let expr = lambda(&vars, app(schema, pattern(schema, p), args));
    outcome(
        &expr,
        &all,
        schema,
        &mut MemHost::default(),
        Limits::default(),
    )
}

#[test]
fn results_must_match_the_return_schema() {
    check(
        int(1),
        &[],
        "s",
        "Internal: result does not match the return schema s: expected s, got Int",
    );
    check(
        lit("i8", "300"),
        &[],
        "i1",
        "Internal: result does not match the return schema i1: expected i1, got integer 300",
    );
    check(
        container("aj", vec![int(1)]),
        &[],
        "as",
        "Internal: result does not match the return schema as: expected s, got Int",
    );
    let compiled = compile(&lambda(&["x"], bound("x", "j"))).unwrap();
    let got = run(&compiled, &[], vec![Value::Nil], &Schema::Nil, &mut NoFiles);
    assert_eq!(
        got.unwrap_err().message,
        "1 arguments given with 0 argument schemas"
    );
}

/// `let x1 = [x0, x0] in let x2 = [x1, x1] in ...`: the value doubles at
/// every level.
fn doubling(levels: usize) -> Json {
    let mut body = bound(&format!("x{levels}"), "j");
    for level in (1..=levels).rev() {
        let prev = bound(&format!("x{}", level - 1), "j");
        body = let_in(
            &format!("x{level}"),
            container("aj", vec![prev.clone(), prev]),
            "j",
            body,
        );
    }
    let_in("x0", s("payload"), "j", body)
}

/// `@load` asks its host for at most what the budget still takes: a file
/// over it is refused as charging it would be, one under it loads.
#[test]
fn load_reads_at_most_what_the_budget_takes() {
    let mut host = MemHost::default();
    host.files
        .insert("big.txt".into(), vec![b'y'; 100 * 16 + 16]);
    host.files.insert("small.txt".into(), vec![b'y'; 1000]);
    let limits = Limits {
        max_steps: 100,
        ..Limits::default()
    };
    let load = |name: &str| unary("load", "s", s(name));
    assert_eq!(
        outcome(&load("big.txt"), &[], "s", &mut host, limits),
        "Limit: evaluation step limit exceeded"
    );
    let small = outcome(&load("small.txt"), &[], "s", &mut host, limits);
    assert_eq!(small, format!("\"{}\"", "y".repeat(1000)));
}

#[test]
fn limits_stop_hostile_trees() {
    let mut host = MemHost::default();
    let small = Limits {
        max_steps: 1_000_000,
        ..Limits::default()
    };
    // Exponential growth runs into the step budget, not out of memory.
    let got = outcome(&doubling(60), &[], "j", &mut host, small);
    assert_eq!(got, "Limit: evaluation step limit exceeded");
    // Deep nesting runs into the depth limit before the stack ends.
    let mut deep = int(1);
    for _ in 0..120 {
        deep = let_in("x", deep, "j", bound("x", "j"));
    }
    assert_eq!(outcome(&deep, &[], "j", &mut host, Limits::default()), "1");
    let limits = Limits {
        max_depth: 100,
        ..Limits::default()
    };
    assert_eq!(
        outcome(&deep, &[], "j", &mut host, limits),
        "Limit: evaluation nesting exceeds 100 levels"
    );
    let shallow = Limits {
        max_depth: 10,
        max_steps: 100,
    };
    assert_eq!(
        outcome(
            &container("aj", vec![int(1)]),
            &[],
            "aj",
            &mut host,
            shallow
        ),
        "[1]"
    );
    let mut nested = int(1);
    for _ in 0..10 {
        nested = container("t1j", vec![nested]);
    }
    assert_eq!(
        outcome(&nested, &[], "j", &mut host, shallow),
        "Limit: evaluation nesting exceeds 10 levels"
    );
    // Long interpolations are charged by size.
    let big = "x".repeat(4096);
    let mut grow = s(&big);
    for _ in 0..30 {
        grow = let_in(
            "s",
            grow,
            "s",
            app(
                "s",
                interpolation(&["", "", ""]),
                vec![bound("s", "s"), bound("s", "s")],
            ),
        );
    }
    assert_eq!(
        outcome(&grow, &[], "s", &mut host, small),
        "Limit: evaluation step limit exceeded"
    );
}

#[test]
fn compile_rejects_overly_deep_trees() {
    let mut deep = int(1);
    for _ in 0..MAX_TREE_DEPTH {
        deep = throw(deep);
    }
    assert!(compile(&deep).is_ok());
    deep = throw(deep);
    check_malformed(
        deep,
        &format!("expression tree nesting exceeds {MAX_TREE_DEPTH} levels"),
    );
}

#[test]
fn shapes_fixture_pure_commands() {
    use crate::format::manifest::{Arg, CommandKind, Manifest};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/shapes/manifest.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let manifest = Manifest::from_json(&text, &mut Vec::new()).unwrap();
    let call = |name: &str, args: &[&str]| {
        let cmd = manifest.commands.iter().find(|c| c.name == name).unwrap();
        assert_eq!(cmd.kind, CommandKind::Pure);
        let expr = compile(cmd.expr.as_ref().unwrap()).unwrap();
        let schemas: Vec<Schema> = cmd
            .args
            .iter()
            .map(|a| match a {
                Arg::Pos(p) => p.schema.as_ref().and_then(|s| s.schema()).cloned().unwrap(),
                _ => Schema::Bool,
            })
            .collect();
        let values = schemas
            .iter()
            .zip(args)
            .map(|(s, j)| codec::from_json(s, &serde_json::from_str(j).unwrap()).unwrap())
            .collect();
        let ret = cmd.ret.schema.schema().unwrap();
        run(&expr, &schemas, values, ret, &mut NoFiles)
            .map(|v| codec::to_json(ret, &v).unwrap_or_default())
    };
    assert_eq!(call("pureAnswer", &[]), Ok("42".to_string()));
    let err = call("mustFail", &["5"]).unwrap_err();
    assert!(err.is_catchable());
    assert_eq!(err.kind, EvalErrorKind::User);
    assert!(err.message.contains("boom"));
    assert_eq!(err.message, "intentional failure: boom");
}
