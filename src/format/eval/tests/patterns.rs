//! Tests of patterns: getters, setters, bracket chains, root patterns.

use super::*;

#[test]
fn pattern_examples_from_the_spec() {
    assert_eq!(
        getter(key(vec![("x", end())]), REC, r#"{"x":1,"y":"a"}"#, "j"),
        "1"
    );
    assert_eq!(
        getter(
            key(vec![("x", end()), ("y", end())]),
            REC,
            r#"{"x":1,"y":"a"}"#,
            "t2js"
        ),
        "[1,\"a\"]"
    );
    assert_eq!(
        getter(
            idx(vec![(1, idx(vec![(0, end())]))]),
            "t2jt2sj",
            r#"[5,["p",7]]"#,
            "s"
        ),
        "\"p\""
    );
    let xyz = "m31xj1ys1zf8";
    assert_eq!(
        setter(
            key(vec![("x", end())]),
            xyz,
            r#"{"x":0,"y":"hi","z":8}"#,
            &[("j", "99")]
        ),
        r#"{"x":99,"y":"hi","z":8.0}"#
    );
    let nested = "m31xj1yt2sj1zf8";
    assert_eq!(
        setter(
            key(vec![("x", end()), ("y", idx(vec![(0, end())]))]),
            nested,
            r#"{"x":0,"y":["orig",1],"z":3}"#,
            &[("j", "42"), ("s", "\"rewritten\"")]
        ),
        r#"{"x":42,"y":["rewritten",1],"z":3.0}"#
    );
}

#[test]
fn getters_and_setters() {
    // One terminal whose value is itself a tuple is returned as is.
    assert_eq!(
        getter(idx(vec![(1, end())]), "t2jt2sj", r#"[5,["p",7]]"#, "t2sj"),
        "[\"p\",7]"
    );
    // idx selects record fields by position; terminals come in DFS order.
    assert_eq!(
        getter(
            idx(vec![(1, end()), (0, end())]),
            REC,
            r#"{"x":1,"y":"a"}"#,
            "t2sj"
        ),
        "[\"a\",1]"
    );
    assert_eq!(
        getter(
            key(vec![("x", end()), ("x", end())]),
            REC,
            r#"{"x":1,"y":"a"}"#,
            "t2jj"
        ),
        "[1,1]"
    );
    // Keys resolve through named and hinted schemas.
    assert_eq!(
        getter(
            key(vec![("value", end())]),
            "&4Treem25valuej8childrena^4Tree",
            r#"{"value":3,"children":[]}"#,
            "j"
        ),
        "3"
    );
    assert_eq!(
        getter(key(vec![("z", end())]), REC, r#"{"x":1,"y":"a"}"#, "j"),
        "Internal: Pattern contains key missing in schema: z"
    );
    assert_eq!(
        getter(idx(vec![(2, end())]), REC, r#"{"x":1,"y":"a"}"#, "j"),
        "Internal: Pattern child index 2 out of range for schema size 2"
    );
    assert_eq!(
        getter(key(vec![("x", end())]), "t2jj", "[1,2]", "j"),
        "Internal: Pattern contains key missing in schema: x"
    );
    assert_eq!(
        getter(idx(vec![(0, end())]), "aj", "[1]", "j"),
        "Internal: pattern receiver of schema aj is not a tuple or record"
    );
    assert_eq!(
        getter(idx(vec![]), "t2jj", "[1,2]", "j"),
        "Internal: pattern selects no value"
    );
    // Setters keep the fields they do not touch, also nested ones.
    assert_eq!(
        setter(
            idx(vec![(1, idx(vec![(1, end())]))]),
            "t2jt2sj",
            r#"[5,["p",7]]"#,
            &[("j", "8")]
        ),
        r#"[5,["p",8]]"#
    );
    assert_eq!(
        setter(
            key(vec![("x", end()), ("x", end())]),
            REC,
            r#"{"x":1,"y":"a"}"#,
            &[("j", "2"), ("j", "3")]
        ),
        r#"{"x":3,"y":"a"}"#
    );
    assert_eq!(
        setter(
            key(vec![("x", end())]),
            REC,
            r#"{"x":1,"y":"a"}"#,
            &[("j", "2"), ("j", "3")]
        ),
        "Internal: pattern setter selects 1 fields but got 2 new values"
    );
    let no_args = app("j", pattern("j", end()), vec![]);
    check(
        no_args,
        &[],
        "j",
        "Internal: No arguments provided to pattern",
    );
}

#[test]
fn root_patterns_receive_the_command_arguments() {
    // getX = .x on Point -> Int
    let get_x = json!({"tag":"pattern","schema":"j","pattern":{"type":"key","selectors":[{"key":"x","sub":{"type":"end"}}]}});
    check(get_x.clone(), &[("m21xj1yj", r#"{"x":4,"y":5}"#)], "j", "4");
    check(
        get_x,
        &[],
        "j",
        "Internal: No arguments provided to pattern",
    );
    let set_x = pattern("m21xj1yj", key(vec![("x", end())]));
    check(
        set_x,
        &[("m21xj1yj", r#"{"x":4,"y":5}"#), ("j", "9")],
        "m21xj1yj",
        r#"{"x":9,"y":5}"#,
    );
    let index = pattern("j", json!({"type": "bracket_index"}));
    check(index, &[("j", "-1"), ("aj", "[1,2,3]")], "j", "3");
}

fn bracket_index(sub: Option<Json>) -> Json {
    match sub {
        Some(sub) => json!({"type": "bracket_index", "sub": sub}),
        None => json!({"type": "bracket_index"}),
    }
}

fn slice() -> Json {
    json!({"type": "bracket_slice"})
}

#[test]
fn bracket_leaves() {
    let xs = container("aj", vec![int(10), int(20), int(30)]);
    let at = |i: Json| app("j", pattern("j", bracket_index(None)), vec![i, xs.clone()]);
    check(at(int(0)), &[], "j", "10");
    check(at(int(-1)), &[], "j", "30");
    check(at(lit("i4", "-3")), &[], "j", "10");
    check(at(some(1)), &[], "j", "20");
    check(
        at(none()),
        &[],
        "j",
        "Internal: Bracket index cannot be Null",
    );
    check(
        at(int(3)),
        &[],
        "j",
        "Internal: Bracket index 3 out of bounds for array of size 3",
    );
    check(
        at(int(-4)),
        &[],
        "j",
        "Internal: Bracket index -4 out of bounds for array of size 3",
    );
    check(
        at(lit("j", "18446744073709551616")),
        &[],
        "j",
        "Internal: Bracket bound: BigInt with more than 1 limb does not fit in i64",
    );
    check(
        app("j", pattern("j", bracket_index(None)), vec![xs.clone()]),
        &[],
        "j",
        "Internal: BracketIndex expects 2 args (index, receiver)",
    );
    let cut =
        |a: Json, b: Json, c: Json| app("aj", pattern("aj", slice()), vec![a, b, c, xs.clone()]);
    check(cut(none(), none(), none()), &[], "aj", "[10,20,30]");
    check(cut(none(), none(), some(-1)), &[], "aj", "[30,20,10]");
    check(cut(some(1), none(), none()), &[], "aj", "[20,30]");
    check(cut(some(-2), some(-1), none()), &[], "aj", "[20]");
    check(cut(some(5), some(9), none()), &[], "aj", "[]");
    check(
        cut(none(), none(), some(0)),
        &[],
        "aj",
        "Internal: Bracket slice step cannot be 0",
    );
    check(
        app("aj", pattern("aj", slice()), vec![none(), xs.clone()]),
        &[],
        "aj",
        "Internal: BracketSlice expects 4 args (start, stop, step, receiver)",
    );
}

#[test]
fn bracket_chains_take_bounds_before_the_receiver() {
    let data = r#"{"xs":[{"x":1,"y":2},{"x":3,"y":4}],"n":7}"#;
    let schema = "m22xsam21xj1yj1nj";
    let run_chain = |p: Json, bounds: Vec<Json>, ret: &str| {
        let mut args = bounds;
        args.push(bound("r", schema));
        outcome(
            &lambda(&["r"], app(ret, pattern(ret, p), args)),
            &[(schema, data)],
            ret,
            &mut MemHost::default(),
            Limits::default(),
        )
    };
    // .xs[i].x
    let xs_i_x = key(vec![("xs", bracket_index(Some(key(vec![("x", end())]))))]);
    assert_eq!(run_chain(xs_i_x.clone(), vec![int(1)], "j"), "3");
    assert_eq!(run_chain(xs_i_x.clone(), vec![some(-2)], "j"), "1");
    assert_eq!(
        run_chain(xs_i_x.clone(), vec![int(2)], "j"),
        "Internal: Bracket index 2 out of bounds for array of size 2"
    );
    // With one argument the chain has no bounds to consume.
    assert_eq!(
        run_chain(xs_i_x, vec![], "j"),
        "Internal: bracket-index step exhausted runtime args"
    );
    // (.xs[::-1], .n): a slice terminal and a plain field.
    let two = key(vec![("xs", slice()), ("n", end())]);
    assert_eq!(
        run_chain(two, vec![none(), none(), some(-1)], "t2am21xj1yjj"),
        r#"[[{"x":3,"y":4},{"x":1,"y":2}],7]"#
    );
    // Brackets cannot set.
    let setter = key(vec![("xs", bracket_index(Some(end())))]);
    let expr = lambda(
        &["r"],
        app(
            schema,
            pattern(schema, setter),
            vec![bound("r", schema), int(1), int(2)],
        ),
    );
    let got = outcome(
        &expr,
        &[(schema, data)],
        schema,
        &mut MemHost::default(),
        Limits::default(),
    );
    assert_eq!(got, "Internal: bracket patterns cannot be used as setters");
}
