//! Unit tests of the `value` module (kept apart: the module itself is long enough).

use super::*;
use crate::format::schema::parse;

fn big(text: &str) -> BigInt {
    BigInt::parse_decimal(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

#[track_caller]
fn check_big(text: &str, limbs: &[u64]) {
    let b = big(text);
    assert_eq!(b.limbs, limbs, "{text}");
    let canonical = text.trim_start_matches('-').trim_start_matches('0');
    let canonical = match (text.starts_with('-'), canonical.is_empty()) {
        (_, true) => "0".to_string(),
        (true, false) => format!("-{canonical}"),
        (false, false) => canonical.to_string(),
    };
    assert_eq!(b.to_decimal(), canonical, "{text}");
    assert_eq!(BigInt::from_limbs(limbs.to_vec()), b);
}

#[test]
fn bigint_limbs_are_minimal_and_exact() {
    check_big("0", &[0]);
    check_big("-0", &[0]);
    check_big("000", &[0]);
    check_big("-000", &[0]);
    check_big("1", &[1]);
    check_big("-1", &[u64::MAX]);
    check_big("41", &[41]);
    check_big("9223372036854775807", &[i64::MAX as u64]);
    check_big("9223372036854775808", &[1 << 63, 0]);
    check_big("-9223372036854775808", &[1 << 63]);
    check_big("-9223372036854775809", &[(1 << 63) - 1, u64::MAX]);
    check_big("18446744073709551615", &[u64::MAX, 0]);
    check_big("18446744073709551616", &[0, 1]);
    check_big("-18446744073709551616", &[0, u64::MAX]);
    check_big("340282366920938463463374607431768211456", &[0, 0, 1]);
    check_big(
        "123456789012345678901234567890",
        &[14083847773837265618, 6692605942],
    );
    // A long number survives the round trip digit for digit.
    let long: String = (0..500)
        .map(|i| char::from(b'0' + (i * 7 % 10) as u8))
        .collect();
    let long = format!("9{long}");
    assert_eq!(big(&long).to_decimal(), long);
    assert_eq!(big(&format!("-{long}")).to_decimal(), format!("-{long}"));
}

#[test]
fn bigint_conversions() {
    assert_eq!(BigInt::from_i64(-5).to_i64(), Some(-5));
    assert_eq!(BigInt::from_u64(u64::MAX).limbs, vec![u64::MAX, 0]);
    assert_eq!(BigInt::from_u64(u64::MAX).to_u64(), Some(u64::MAX));
    assert_eq!(BigInt::from_u64(u64::MAX).to_i64(), None);
    assert_eq!(BigInt::from_i64(-1).to_u64(), None);
    assert_eq!(BigInt::from_limbs(vec![]).limbs, vec![0]);
    assert_eq!(BigInt::from_limbs(vec![5, 0, 0]).limbs, vec![5]);
    assert_eq!(
        BigInt::from_limbs(vec![u64::MAX, u64::MAX]).limbs,
        vec![u64::MAX]
    );
    assert_eq!(
        BigInt::from_limbs(vec![1 << 63, 0, 0]).limbs,
        vec![1 << 63, 0]
    );
    for bad in ["", "-", "+1", "1.0", "1e3", " 1", "0x10", "--1", "1-"] {
        assert_eq!(
            BigInt::parse_decimal(bad),
            Err(ParseBigIntError::Invalid),
            "{bad:?}"
        );
    }
    let too_long = "1".repeat(BigInt::MAX_DIGITS + 1);
    assert_eq!(
        BigInt::parse_decimal(&too_long),
        Err(ParseBigIntError::TooLong)
    );
    assert!(
        BigInt::parse_decimal(&"9".repeat(BigInt::MAX_DIGITS))
            .unwrap()
            .limbs
            .len()
            <= BigInt::MAX_LIMBS
    );
}

/// Checks the head width and alignment of `text`'s root and, for a tuple or
/// record root, its member offsets.
#[track_caller]
fn check_layout(text: &str, width: usize, align: usize, offsets: &[usize]) {
    let schema = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let layout = Layout::new(&schema).unwrap_or_else(|e| panic!("{text}: {e}"));
    let node = layout.node(layout.root());
    assert_eq!((node.width, node.align), (width, align), "{text}");
    let got: Vec<usize> = match &node.kind {
        NodeKind::Tuple(members) | NodeKind::Record(members) => {
            members.iter().map(|m| m.offset).collect()
        }
        _ => Vec::new(),
    };
    assert_eq!(got, offsets, "{text}: member offsets");
    assert_eq!(
        node.fixed,
        crate::format::schema::is_fixed_width(&schema),
        "{text}: fixed"
    );
}

/// The layout of the node a path of member indices leads to from the root
/// (a list or optional step goes to its element).
#[track_caller]
fn node_at(text: &str, path: &[usize]) -> (usize, usize, Vec<usize>) {
    let layout = Layout::new(&parse(text).unwrap()).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut id = layout.root();
    for &step in path {
        id = match &layout.node(id).kind {
            NodeKind::Tuple(members) | NodeKind::Record(members) => members[step].node,
            NodeKind::List { elem, .. } => *elem,
            NodeKind::Optional(inner) => *inner,
            other => panic!("{text}: no step {step} into {other:?}"),
        };
    }
    let node = layout.node(id);
    let offsets = match &node.kind {
        NodeKind::Tuple(members) | NodeKind::Record(members) => {
            members.iter().map(|m| m.offset).collect()
        }
        _ => Vec::new(),
    };
    (node.width, node.align, offsets)
}

#[track_caller]
fn check_layout_err(text: &str, message: &str) {
    match Layout::new(&parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))) {
        Ok(layout) => panic!("{text}: compiled, root {:?}", layout.node(layout.root())),
        Err(e) => assert_eq!(e.to_string(), message, "{text}"),
    }
}

#[test]
fn layout_matches_reference_examples() {
    check_layout("m36tmpDirsanumThreadsjcremoveCachesb", 40, 8, &[0, 16, 32]);
    check_layout("t2i4s", 24, 8, &[0, 8]);
    check_layout("t3i2saf4", 40, 8, &[0, 8, 24]);
    check_layout("m21ai11bi1", 2, 8, &[0, 1]);
    check_layout("m11xb", 1, 8, &[0]);
    check_layout("t2i1m11xb", 16, 8, &[0, 8]);
    check_layout("m21pt2i1i41q?m11xb", 16, 8, &[0, 8]);
    check_layout("z", 0, 1, &[]);
    check_layout("t0", 0, 1, &[]);
    check_layout("m0", 0, 8, &[]);
    check_layout("at2i1f8", 16, 8, &[]);
    check_layout("?t2i2i1", 8, 8, &[]);
    check_layout("t2i2i1", 4, 2, &[0, 2]);
}

// Recursive types: the head is finite wherever the back-reference sits
// behind a list or an optional, however deep inside tuples and records that
// list is; the element then has the full width of the declared type. The
// widths are those of the reference runtime (a back-reference is laid out
// as the declaration it names).

#[test]
fn recursion_directly_under_a_list_or_optional() {
    let tree = "&4Treem25valuej8childrena^4Tree";
    check_layout(tree, 32, 8, &[0, 16]);
    assert_eq!(node_at(tree, &[1, 0]), (32, 8, vec![0, 16]));
    let list = "&4Listm24headj4tail?^4List";
    check_layout(list, 24, 8, &[0, 16]);
    assert_eq!(node_at(list, &[1, 0]), (24, 8, vec![0, 16]));
    // The body of a declaration need not be a record.
    check_layout("&1La^1L", 16, 8, &[]);
    check_layout("&1O?^1O", 8, 8, &[]);
    check_layout("&1Tt2i1a^1T", 24, 8, &[0, 8]);
}

#[test]
fn recursion_through_a_tuple_inside_a_list() {
    // Issue #11: `Trie a = {val: ?a, subs: [(Str, Trie a)]}`.
    let trie = "&4Trie<dict>m23val?j4subsat2s^4Trie";
    check_layout(trie, 24, 8, &[0, 8]);
    assert_eq!(node_at(trie, &[1, 0]), (40, 8, vec![0, 16]));
    assert_eq!(node_at(trie, &[1, 0, 1]), (24, 8, vec![0, 8]));
    let tree_kv = "&6TreeKV<dict>m33keys5valuej8childrenat2s^6TreeKV";
    check_layout(tree_kv, 48, 8, &[0, 16, 32]);
    assert_eq!(node_at(tree_kv, &[2, 0]), (64, 8, vec![0, 16]));
}

#[test]
fn recursion_through_structs_inside_lists_and_optionals() {
    // A tuple inside an optional.
    let opt = "&1Am21xi41n?t2i1^1A";
    check_layout(opt, 16, 8, &[0, 8]);
    assert_eq!(node_at(opt, &[1, 0]), (24, 8, vec![0, 8]));
    // A record inside a list.
    let node = "&4Nodem14kidsam25labels4nodet2i1^4Node";
    check_layout(node, 16, 8, &[0]);
    assert_eq!(node_at(node, &[0, 0]), (40, 8, vec![0, 16]));
    assert_eq!(node_at(node, &[0, 0, 1]), (24, 8, vec![0, 8]));
    // Several levels: a tuple in a tuple in a list.
    let deep = "&1Rm11xat2bt2j^1R";
    check_layout(deep, 16, 8, &[0]);
    assert_eq!(node_at(deep, &[0, 0]), (40, 8, vec![0, 8]));
    assert_eq!(node_at(deep, &[0, 0, 1]), (32, 8, vec![0, 16]));
    // An optional inside a list inside a tuple inside a list.
    let mixed = "&1Mm21ki21vat2sa?^1M";
    check_layout(mixed, 24, 8, &[0, 8]);
    assert_eq!(node_at(mixed, &[1, 0]), (32, 8, vec![0, 16]));
    // A fixed-length list guards as well as any other.
    check_layout("&1Fm11ca:2t2f8^1F", 16, 8, &[0]);
    assert_eq!(node_at("&1Fm11ca:2t2f8^1F", &[0, 0]), (24, 8, vec![0, 8]));
}

#[test]
fn mutual_and_stacked_recursion() {
    // `A = {x: Int, bs: [B]}`, `B = {y: (Int8, A), z: Str}`: B holds A in
    // place, A holds B behind a list.
    let mutual = "&1Am21xj2bsa&1Bm21yt2i1^1A1zs";
    check_layout(mutual, 32, 8, &[0, 16]);
    assert_eq!(node_at(mutual, &[1, 0]), (56, 8, vec![0, 40]));
    assert_eq!(node_at(mutual, &[1, 0, 0]), (40, 8, vec![0, 8]));
    assert_eq!(node_at(mutual, &[1, 0, 0, 1]), (32, 8, vec![0, 16]));
    // Two names for one declaration, and an alias of an outer one.
    check_layout("&1A&1Bm21xa^1A1ya^1B", 32, 8, &[0, 16]);
    let alias = "&1Am11x?&1B^1A";
    check_layout(alias, 8, 8, &[0]);
    assert_eq!(node_at(alias, &[0, 0]), (8, 8, vec![0]));
    // An inner declaration that shadows an outer name.
    let shadow = "&1Am21ai41ba&1Am11cs";
    check_layout(shadow, 24, 8, &[0, 8]);
    assert_eq!(node_at(shadow, &[1, 0]), (16, 8, vec![0]));
}

#[test]
fn infinite_recursion_is_a_clear_error() {
    let msg = |name: &str| {
        format!(
            "recursive type '{name}' contains itself outside any list or optional, so it has no finite width"
        )
    };
    check_layout_err("&1Am11x^1A", &msg("A"));
    check_layout_err("&1At2i1^1A", &msg("A"));
    check_layout_err("&1Am21ai11xt2i1^1A", &msg("A"));
    check_layout_err("&1Am11xt1t1m11y^1A", &msg("A"));
    // Mutual: A holds B and B holds A, both in place.
    check_layout_err("&1Am11b&1Bm11y^1A", &msg("B"));
    // A finite type beside an infinite one inside it.
    check_layout_err("&1Am21la^1A1b&1Bm11y^1B", &msg("B"));
    // The infinite type sits behind a list of a finite one: still infinite.
    check_layout_err("&1Am11la&1Bt2i1^1B", &msg("B"));
    check_layout_err(
        "&1A^1A",
        "recursive type 'A' is declared as itself, so it has no finite width",
    );
    check_layout_err(
        "&1A&1B^1A",
        "recursive type 'A' is declared as itself, so it has no finite width",
    );
}

#[track_caller]
fn check_json(schema: &str, input: &str, output: &str) {
    let schema = parse(schema).unwrap();
    let json: serde_json::Value = serde_json::from_str(input).unwrap();
    let value = from_json(&schema, &json, "x").unwrap_or_else(|e| panic!("{input}: {e}"));
    let mut out = String::new();
    to_json(&schema, &value, &mut out).unwrap();
    assert_eq!(out, output, "{input}");
}

#[test]
fn json_round_trips() {
    check_json("z", "null", "null");
    check_json("b", "true", "true");
    check_json("i1", "-128", "-128");
    check_json("u8", "18446744073709551615", "18446744073709551615");
    check_json("i8", "-9223372036854775808", "-9223372036854775808");
    check_json(
        "j",
        "123456789012345678901234567890",
        "123456789012345678901234567890",
    );
    check_json(
        "j",
        "\"-123456789012345678901234567890\"",
        "-123456789012345678901234567890",
    );
    check_json("j", "-0", "0");
    check_json("f8", "2", "2.0");
    check_json("f8", "0.1", "0.1");
    check_json("f8", "1e16", "1e+16");
    check_json("f8", "-0.0", "-0.0");
    check_json("f8", "\"nan\"", "\"nan\"");
    check_json("f8", "\"Infinity\"", "\"inf\"");
    check_json("f8", "\"-inf\"", "\"-inf\"");
    check_json("f4", "0.1", "0.1");
    check_json("f4", "16777217", "16777216.0");
    check_json("f4", "3.14159265358979", "3.1415927");
    check_json(
        "s",
        "\"a\\\"b\\\\c\\n\\u0001/\u{7f}é\"",
        "\"a\\\"b\\\\c\\n\\u0001/\u{7f}é\"",
    );
    check_json("ai4", "[1,2,3]", "[1,2,3]");
    check_json("a:2f8", "[1.5,2]", "[1.5,2.0]");
    check_json("t2js", "[1,\"x\"]", "[1,\"x\"]");
    check_json(
        "m36tmpDirsanumThreadsjcremoveCachesb",
        "{\"removeCaches\":true,\"tmpDir\":\"/t\",\"numThreads\":4}",
        "{\"tmpDir\":\"/t\",\"numThreads\":4,\"removeCaches\":true}",
    );
    check_json("m21xj1yj", "[1,2]", "{\"x\":1,\"y\":2}");
    check_json("m21xj1y?j", "{\"x\":1}", "{\"x\":1,\"y\":null}");
    check_json("?j", "null", "null");
    check_json("?j", "5", "5");
    check_json(
        "m22\"ks2\\\nb",
        "{\"\\\"k\":\"v\",\"\\\\\\n\":false}",
        "{\"\\\"k\":\"v\",\"\\\\\\n\":false}",
    );
    check_json(
        "&4Treem25valuej8childrena^4Tree",
        "{\"value\":1,\"children\":[{\"value\":2,\"children\":[]}]}",
        "{\"value\":1,\"children\":[{\"value\":2,\"children\":[]}]}",
    );
    check_json("F", "\"/tmp/x\"", "\"/tmp/x\"");
}

#[track_caller]
fn check_err(schema: &str, path: &str, input: &str, msg: &str) {
    let schema = parse(schema).unwrap();
    let json: serde_json::Value = serde_json::from_str(input).unwrap();
    match from_json(&schema, &json, path) {
        Ok(v) => panic!("{input} accepted as {v:?}"),
        Err(e) => assert_eq!(e.to_string(), msg, "{input}"),
    }
}

#[test]
fn json_errors_name_the_path() {
    check_err("z", "a", "0", "argument 'a': expected null, got 0");
    check_err(
        "b",
        "flag",
        "1",
        "argument 'flag': expected true or false, got 1",
    );
    check_err(
        "b",
        "flag",
        "\"true\"",
        "argument 'flag': expected true or false, got \"true\"",
    );
    check_err(
        "am11xj",
        "_1",
        "[{\"x\":1},{\"x\":2},{\"x\":\"abc\"}]",
        "argument '_1[2].x': expected an integer, got \"abc\"",
    );
    check_err(
        "u1",
        "factor",
        "300",
        "argument 'factor': 300 is out of range for an 8-bit unsigned integer (0 to 255)",
    );
    check_err(
        "u1",
        "factor",
        "-1",
        "argument 'factor': -1 is out of range for an 8-bit unsigned integer (0 to 255)",
    );
    check_err(
        "i1",
        "n",
        "128",
        "argument 'n': 128 is out of range for an 8-bit signed integer (-128 to 127)",
    );
    check_err(
        "i8",
        "n",
        "99999999999999999999999999999999999999999999",
        "argument 'n': 99999999999999999999999999999999999999999999 is out of range for a 64-bit signed integer \
         (-9223372036854775808 to 9223372036854775807)",
    );
    check_err(
        "u8",
        "n",
        "18446744073709551616",
        "argument 'n': 18446744073709551616 is out of range for a 64-bit unsigned integer (0 to 18446744073709551615)",
    );
    check_err(
        "i4",
        "n",
        "1.0",
        "argument 'n': expected an integer, got 1.0",
    );
    check_err(
        "i4",
        "n",
        "1e3",
        "argument 'n': expected an integer, got 1e+3",
    );
    check_err(
        "i4",
        "n",
        "\"5\"",
        "argument 'n': expected an integer, got \"5\"",
    );
    check_err(
        "j",
        "n",
        "1.5",
        "argument 'n': expected an integer, got 1.5",
    );
    check_err(
        "j",
        "n",
        "\"12a\"",
        "argument 'n': expected an integer, got \"12a\"",
    );
    check_err(
        "j",
        "n",
        "null",
        "argument 'n': expected an integer, got null",
    );
    check_err(
        "j",
        "n",
        "[1]",
        "argument 'n': expected an integer, got an array",
    );
    check_err(
        "j",
        "n",
        "{}",
        "argument 'n': expected an integer, got an object",
    );
    check_err(
        "j",
        "n",
        &format!("\"{}\"", "1".repeat(BigInt::MAX_DIGITS + 1)),
        &format!(
            "argument 'n': integer has {} digits, more than the 150000 supported",
            BigInt::MAX_DIGITS + 1
        ),
    );
    check_err(
        "f8",
        "r",
        "\"x\"",
        "argument 'r': expected a number, got \"x\"",
    );
    check_err(
        "f8",
        "r",
        "\"2.5\"",
        "argument 'r': expected a number, got \"2.5\"",
    );
    check_err(
        "f8",
        "r",
        "1e400",
        "argument 'r': 1e+400 is out of range for a 64-bit float",
    );
    check_err(
        "f4",
        "r",
        "1e39",
        "argument 'r': 1e+39 is out of range for a 32-bit float",
    );
    check_err(
        "af8",
        "r",
        "[1,\"x\"]",
        "argument 'r[1]': expected a number, got \"x\"",
    );
    check_err(
        "s",
        "name",
        "5",
        "argument 'name': expected a string, got 5",
    );
    check_err(
        "s",
        "name",
        &format!("[\"{}\"]", "y".repeat(50)),
        "argument 'name': expected a string, got an array",
    );
    check_err(
        "j",
        "n",
        &format!("\"{}\"", "y".repeat(50)),
        &format!(
            "argument 'n': expected an integer, got \"{}...\"",
            "y".repeat(40)
        ),
    );
    check_err(
        "F",
        "path",
        "1",
        "argument 'path': expected a file path string, got 1",
    );
    check_err(
        "aj",
        "xs",
        "{\"a\":1}",
        "argument 'xs': expected an array, got an object",
    );
    check_err(
        "a:3f8",
        "v",
        "[1,2]",
        "argument 'v': expected an array of exactly 3 items, got 2",
    );
    check_err(
        "t2js",
        "_1",
        "[1,\"a\",3]",
        "argument '_1': expected an array of exactly 2 items, got 3",
    );
    check_err(
        "t1j",
        "_1",
        "[]",
        "argument '_1': expected an array of exactly 1 item, got 0",
    );
    check_err(
        "m36tmpDirsanumThreadsjcremoveCachesb",
        "config",
        "{\"tmpDir\":\"/t\",\"extra\":1}",
        "argument 'config': unknown field 'extra' (expected tmpDir, numThreads, removeCaches)",
    );
    check_err(
        "m21xj1yj",
        "config",
        "{\"y\":1}",
        "argument 'config': missing field 'x'",
    );
    check_err(
        "m21xj1yj",
        "p",
        "[1]",
        "argument 'p': expected an array of exactly 2 items, got 1",
    );
    check_err(
        "m21xj1yj",
        "p",
        "5",
        "argument 'p': expected an object, got 5",
    );
    check_err(
        "m21xj1yj",
        "p",
        "null",
        "argument 'p': expected an object, got null",
    );
    check_err(
        "m11xm11yj",
        "p",
        "{\"x\":{\"y\":true}}",
        "argument 'p.x.y': expected an integer, got true",
    );
    check_err(
        "T",
        "t",
        "[]",
        "argument 't': tables cannot be passed as JSON",
    );
    check_err(
        "?T",
        "t",
        "[]",
        "argument 't': tables cannot be passed as JSON",
    );
    let recursive = parse("&1Ra^1R").unwrap();
    let mut nested = serde_json::Value::Array(Vec::new());
    for _ in 0..MAX_VALUE_DEPTH + 1 {
        nested = serde_json::Value::Array(vec![nested]);
    }
    let err = from_json(&recursive, &nested, "r").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "argument 'r{}': nesting exceeds 256 levels",
            "[0]".repeat(MAX_VALUE_DEPTH + 1)
        )
    );
    check_err(
        "&1Am11x^1A",
        "x",
        "{}",
        "argument 'x': invalid schema: recursive type 'A' contains itself outside any list or optional, so it has no finite width",
    );
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let schema = format!("{}j", "a".repeat(100));
    let value = from_json(
        &parse(&schema).unwrap(),
        &serde_json::from_str(&deep).unwrap(),
        "d",
    );
    assert!(value.is_ok());
}

#[test]
fn json_output_rejects_mismatched_values() {
    let schema = parse("ai4").unwrap();
    let mut out = String::new();
    let err = to_json(&schema, &Value::Str(b"x".to_vec()), &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot encode value: expected a list, got a string"
    );
    let err = to_json(&parse("u1").unwrap(), &Value::Int(300), &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot encode value: 300 does not fit an 8-bit unsigned integer"
    );
    let err = to_json(&parse("T").unwrap(), &Value::Nil, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot encode value: tables are not supported"
    );
    // Non-UTF-8 bytes are replaced, not dropped.
    let mut out = String::new();
    to_json(
        &parse("s").unwrap(),
        &Value::Str(vec![b'a', 0xff, b'b']),
        &mut out,
    )
    .unwrap();
    assert_eq!(out, "\"a\u{fffd}b\"");
    // Fixed ints accept either integer variant when it fits.
    let mut out = String::new();
    to_json(
        &parse("t2u2j").unwrap(),
        &Value::Tuple(vec![Value::Int(7), Value::UInt(u64::MAX)]),
        &mut out,
    )
    .unwrap();
    assert_eq!(out, "[7,18446744073709551615]");
}
