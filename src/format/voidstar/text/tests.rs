//! The text encoder against the typed path (`from_json` then `encode_flat`):
//! same bytes or the same error, over a table of schemas and inputs.

use super::*;
use crate::format::json::scan;
use crate::format::schema::parse;
use crate::format::value::from_json;
use crate::format::voidstar::encode_flat;

/// The typed path's outcome: the blob, or the message a client would see.
fn typed(schema_text: &str, json: &str) -> Result<Vec<u8>, String> {
    let schema = parse(schema_text).map_err(|e| format!("schema: {e}"))?;
    let v: serde_json::Value = serde_json::from_str(json).map_err(|_| "json".to_string())?;
    let value = from_json(&schema, &v, "x").map_err(|e| e.to_string())?;
    encode_flat(&schema, &value).map_err(|e| e.to_string())
}

/// The text encoder's outcome, in the same terms.
fn streamed(schema_text: &str, json: &str) -> Result<Vec<u8>, String> {
    let schema = parse(schema_text).map_err(|e| format!("schema: {e}"))?;
    let layout = match Layout::new(&schema) {
        Ok(l) => l,
        Err(e) => {
            return Err(ValueError {
                path: "x".into(),
                kind: ValueErrorKind::Schema(e.0),
            }
            .to_string())
        }
    };
    match encode_text(&layout, json, "x") {
        Ok(blob) => Ok(blob),
        Err(TextError::Json(_)) => Err("json".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// [`encode_text`] through [`Sliced`], giving each step `budget` units,
/// appending after a few bytes already in the buffer.
fn sliced(layout: &Layout, json: &str, budget: usize) -> Result<Vec<u8>, TextError> {
    scan::validate(json.as_bytes(), 0).map_err(TextError::Json)?;
    let mut enc = Sliced::new();
    let mut steps = 0;
    loop {
        let mut left = budget;
        steps += 1;
        if enc
            .plan_step(layout, json.as_bytes(), "x", &mut left)
            .map_err(TextError::Value)?
        {
            break;
        }
        assert!(
            left == 0 || budget == usize::MAX,
            "a step stops with budget left"
        );
    }
    if let Some(e) = enc.encode_error() {
        return Err(TextError::Encode(e.clone()));
    }
    let mut out = vec![0xA5; 3];
    loop {
        let mut left = budget;
        steps += 1;
        if enc.write_step(layout, json.as_bytes(), &mut out, &mut left) {
            break;
        }
    }
    assert!(steps < 16 * json.len() + 64, "{steps} steps for {json}");
    assert_eq!(out[..3], [0xA5; 3], "appends after what is there");
    Ok(out.split_off(3))
}

/// Every budget from 1 to 24, some larger ones, and no bound give the
/// one-shot encoder's outcome.
#[track_caller]
fn slices_agree(schema: &str, json: &str) {
    let Ok(layout) = Layout::new(&parse(schema).unwrap()) else {
        return;
    };
    let want = encode_text(&layout, json, "x");
    for budget in (1..=24).chain([37, 100, 1000, usize::MAX]) {
        let got = sliced(&layout, json, budget);
        assert_eq!(got, want, "schema {schema}, input {json}, budget {budget}");
    }
}

#[track_caller]
fn same(schema: &str, json: &str) -> Result<Vec<u8>, String> {
    let want = typed(schema, json);
    let got = streamed(schema, json);
    assert_eq!(got, want, "schema {schema}, input {json}");
    slices_agree(schema, json);
    got
}

#[test]
fn seeds_encode_identically() {
    for (schema, json) in crate::format::voidstar::tests::SEEDS {
        assert!(same(schema, json).is_ok(), "{schema} {json}");
    }
}

#[test]
fn edge_cases_agree() {
    let big = format!("[{}]", vec!["1"; 3000].join(","));
    let many_digits = "9".repeat(150_001);
    let deep_list = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let mut cases: Vec<(&str, String)> = vec![
        // Integers: widths, ranges, -0, floats where ints are wanted.
        ("i4", "-0".into()),
        ("i1", "127".into()),
        ("i1", "128".into()),
        ("u1", "-1".into()),
        ("u8", "18446744073709551615".into()),
        ("u8", "18446744073709551616".into()),
        ("i8", "-9223372036854775809".into()),
        ("i4", "1.0".into()),
        ("i4", "1e2".into()),
        ("i4", "\"5\"".into()),
        ("i4", "123456789012345678901234567890123456789012".into()),
        // Big integers: 1, 2 and many limbs, strings, escapes, limits.
        ("j", "0".into()),
        ("j", "-0".into()),
        ("j", "9223372036854775807".into()),
        ("j", "9223372036854775808".into()),
        ("j", "-9223372036854775808".into()),
        ("j", "-9223372036854775809".into()),
        ("j", "170141183460469231731687303715884105727".into()),
        ("j", "170141183460469231731687303715884105728".into()),
        ("j", "-170141183460469231731687303715884105729".into()),
        ("j", "99999999999999999999999999999999999999".into()),
        (
            "j",
            "123456789012345678901234567890123456789012345678901234567890".into(),
        ),
        ("j", "\"-123456789012345678901234567890\"".into()),
        ("j", "\"\\u0031\\u0032\"".into()),
        ("j", "\"12a\"".into()),
        ("j", "\"\"".into()),
        ("j", "\"-\"".into()),
        ("j", "1.5".into()),
        ("j", "1e3".into()),
        ("j", "true".into()),
        ("j", many_digits.clone()),
        ("j", format!("\"{many_digits}\"")),
        ("aj", "[1,-2,3,99999999999999999999999]".into()),
        // Floats: -0, overflow, narrowing, non-finite names.
        ("f8", "-0".into()),
        ("f8", "-0.0".into()),
        ("f8", "1e400".into()),
        ("f8", "-1E400".into()),
        ("f4", "1e39".into()),
        ("f4", "3.4028235e38".into()),
        ("f8", "1e-400".into()),
        ("f8", "\"NaN\"".into()),
        ("f8", "\"-Infinity\"".into()),
        ("f4", "\"inf\"".into()),
        ("f8", "\"infinity\"".into()),
        ("f8", "12".into()),
        ("af4", "[1.5,2.25,-3]".into()),
        // Strings: escapes, surrogates, long ones in messages.
        ("s", r#""a\"b\\c\/d\b\f\n\r\t""#.into()),
        ("s", r#""\u00e9\ud83d\ude00é""#.into()),
        ("s", r#""\ud800""#.into()),
        ("s", r#""\udc00x""#.into()),
        ("s", "\"\"".into()),
        ("s", "5".into()),
        ("i4", format!("\"{}\"", "\\u00e9".repeat(50))),
        ("i4", format!("\"{}\"", "x".repeat(80))),
        (
            "i4",
            "12345678901234567890123456789012345678901234567890.5".into(),
        ),
        ("as", r#"["", "x", "\u0000", "ünï"]"#.into()),
        ("F", "\"\"".into()),
        ("F", "\"/a\\/b\"".into()),
        ("t2bF", "[true,\"/p\"]".into()),
        ("t2i1F", "[1,\"/p\"]".into()),
        // Booleans, nil, optionals.
        ("b", "true".into()),
        ("b", "1".into()),
        ("z", "null".into()),
        ("z", "0".into()),
        ("?i4", "null".into()),
        ("?i4", "5".into()),
        ("??i4", "null".into()),
        ("?s", "\"x\"".into()),
        ("a?i4", "[1,null,3]".into()),
        // Lists: fixed lengths, nesting, empties.
        ("a:3i4", "[1,2,3]".into()),
        ("a:3i4", "[1,2]".into()),
        ("a:2as", "[[\"a\"],[]]".into()),
        ("aai4", "[[1,2],[],[3]]".into()),
        ("ai4", "{}".into()),
        ("ai4", "[1,\"x\"]".into()),
        ("ai8", big),
        // Errors deep into a long list, after slices of good items.
        ("ai4", format!("[{},\"x\",1]", vec!["7"; 150].join(","))),
        (
            "am21xi41ys",
            format!("[{}{{\"x\":1}}]", r#"{"x":1,"y":"a"},"#.repeat(60)),
        ),
        (
            "aaj",
            format!("[{}[1,true]]", "[1,99999999999999999999999],".repeat(40)),
        ),
        // Tuples and records: positional, unknown, missing, duplicates.
        ("t2i4s", "[1,\"a\"]".into()),
        ("t2i4s", "[1]".into()),
        ("t2i4s", "{\"a\":1}".into()),
        ("m21xi41ys", r#"{"x":1,"y":"a"}"#.into()),
        ("m21xi41ys", r#"{"y":"a","x":1}"#.into()),
        ("m21xi41ys", r#"[1,"a"]"#.into()),
        ("m21xi41ys", r#"[1]"#.into()),
        ("m21xi41ys", r#"{"x":1}"#.into()),
        ("m21xi41ys", r#"{"x":1,"y":"a","z":2}"#.into()),
        ("m21xi41ys", r#"{"q":1,"x":1,"y":"a","z":2}"#.into()),
        ("m21xi41ys", r#"{"x":"bad","x":1,"y":"a"}"#.into()),
        ("m21xi41ys", r#"{"x":1,"y":"a","x":"bad"}"#.into()),
        ("m21xi41ys", r#"{"\u0078":1,"y":"a"}"#.into()),
        ("m21xi41ys", r#"{"x\u0041":1,"y":"a"}"#.into()),
        ("m21xi41y?s", r#"{"x":1}"#.into()),
        ("m21xi41y?s", r#"{"x":1,"y":null}"#.into()),
        ("m21xi41y?s", "5".into()),
        ("am21xi41yi4", r#"[{"x":1,"y":2},{"x":3,"y":4}]"#.into()),
        ("m0", "{}".into()),
        ("m0", "{\"a\":1}".into()),
        ("t0", "[]".into()),
        // Recursive types.
        (
            "&1La?m21vi41n^1L",
            r#"[{"v":1,"n":[{"v":2,"n":[]}]},null]"#.into(),
        ),
        ("&1Tm21vi41c?^1T", r#"{"v":1,"c":{"v":2,"c":null}}"#.into()),
        ("&1Tm21vi41c?^1T", r#"{"v":1,"c":{"v":2}}"#.into()),
        // Unsupported schemas and bad JSON.
        ("&1Tm11c^1T", "{}".into()),
        ("ai4", "[1,".into()),
        ("ai4", "[1] x".into()),
        ("ai4", " [ 1 , 2 ] ".into()),
    ];
    // Nesting: serde_json's recursion limit and the value depth limit.
    cases.push(("aaaai4", deep_list(4)));
    cases.push(("ai4", deep_list(130)));
    let mut nested = "i4".to_string();
    for _ in 0..126 {
        nested = format!("a{nested}");
    }
    cases.push((Box::leak(nested.into_boxed_str()), deep_list(127)));
    // A linked list of optional records nests deeper in the value than in
    // the JSON: two value levels per object.
    let mut chain = "null".to_string();
    for i in 0..126 {
        chain = format!("{{\"v\":{i},\"n\":{chain}}}");
    }
    cases.push(("&1Lm21vi41n?^1L", chain));
    let mut omitted = "{\"v\":0}".to_string();
    for i in 0..126 {
        omitted = format!("{{\"v\":{i},\"n\":{omitted}}}");
    }
    cases.push(("&1L??m21vi41n^1L", omitted.clone()));
    cases.push(("&1Lm21vi41n???^1L", omitted));
    // The innermost record sits at value depth 256 and omits its optional
    // field: the validator accepts it, the encoder's depth check does not.
    let mut edge = "{}".to_string();
    for _ in 0..85 {
        edge = format!("{{\"n\":{edge}}}");
    }
    cases.push(("?&1Lm11n??^1L", edge));
    for (schema, json) in &cases {
        let _ = same(schema, json);
    }
}

#[test]
fn errors_name_the_path() {
    let err = streamed("am21xi41yi4", r#"[{"x":1,"y":2},{"x":3,"y":"4"}]"#).unwrap_err();
    assert_eq!(err, "argument 'x[1].y': expected an integer, got \"4\"");
    let err = streamed("m21xi41ys", r#"{"x":1,"y":"a","x":"bad"}"#).unwrap_err();
    assert_eq!(err, "argument 'x.x': expected an integer, got \"bad\"");
}

#[test]
fn plan_sizes_match_the_blob_and_lists_are_counted_once() {
    let layout = Layout::new(&parse("aai4").unwrap()).unwrap();
    let text = "[[1,2],[],[3]]";
    let plan = plan(&layout, text, "x").unwrap();
    assert_eq!(plan.lists.len(), 3, "the outer list and two non-empty ones");
    let mut out = vec![7u8; 5];
    plan.write(&mut out);
    assert_eq!(&out[..5], &[7; 5], "appends after what is there");
    assert_eq!(out.len() - 5, plan.size());
    assert_eq!(out[5..], typed("aai4", text).unwrap()[..]);
}
