//! `outputSchema` per return type and era.

use serde_json::Value;

use super::output_schema;
use crate::format::manifest::Manifest;

/// The one command of a manifest returning `ret` (`extra`: more keys).
fn schema_of(ret: &str, extra: &str, modern: bool) -> Option<String> {
    let text = format!(
        r#"{{"name":"m","build":{{"path":".","time":1,"morloc_version":"0.98.2"}},"commands":[{{"name":"f","type":"pure","return":{ret}{extra}}}]}}"#
    );
    let m = Manifest::from_json(&text, &mut Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    output_schema(&m.commands[0], modern).map(|v: Value| v.to_string())
}

fn modern(schema: &str) -> Option<String> {
    schema_of(&format!(r#"{{"schema":"{schema}"}}"#), "", true)
}

#[test]
fn every_json_type_has_a_modern_output_schema() {
    for (ret, want) in [
        ("j", r#"{"type":"integer"}"#),
        ("i4", r#"{"type":"integer"}"#),
        ("f8", r#"{"type":"number"}"#),
        ("s", r#"{"type":"string"}"#),
        ("b", r#"{"type":"boolean"}"#),
        ("z", r#"{"type":"null"}"#),
        ("aj", r#"{"type":"array","items":{"type":"integer"}}"#),
        (
            "aas",
            r#"{"type":"array","items":{"type":"array","items":{"type":"string"}}}"#,
        ),
        ("?j", r#"{"type":["integer","null"]}"#),
        (
            "a?f8",
            r#"{"type":"array","items":{"type":["number","null"]}}"#,
        ),
        (
            "t2sj",
            r#"{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"minItems":2,"maxItems":2}"#,
        ),
        (
            "m11aj",
            r#"{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}"#,
        ),
        (
            "?m11aj",
            r#"{"type":["object","null"],"properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}"#,
        ),
        // A named type is its body.
        (
            "<dict>at2sj",
            r#"{"type":"array","items":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"minItems":2,"maxItems":2}}"#,
        ),
    ] {
        assert_eq!(modern(ret).as_deref(), Some(want), "return {ret}");
    }
}

#[test]
fn recursive_returns_carry_their_definitions() {
    let tree = r##"{"$ref":"#/$defs/Tree","$defs":{"Tree":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/Tree"}}},"required":["value","children"],"additionalProperties":false}}}"##;
    assert_eq!(
        modern("&4Treem25valuej8childrena^4Tree").as_deref(),
        Some(tree)
    );
    let forest = modern("a&4Treem25valuej8childrena^4Tree").unwrap();
    assert!(
        forest.starts_with(r##"{"type":"array","items":{"$ref":"#/$defs/Tree"},"$defs":{"Tree":"##),
        "{forest}"
    );
}

#[test]
fn legacy_keeps_records_only() {
    for (ret, has) in [
        ("m11aj", true),
        ("<d>m0", true),
        ("aj", false),
        ("j", false),
        ("?m11aj", false),
    ] {
        let got = schema_of(&format!(r#"{{"schema":"{ret}"}}"#), "", false);
        assert_eq!(got.is_some(), has, "return {ret}");
    }
}

#[test]
fn media_returns_projections_and_unknown_types_have_none() {
    // A media type answers with image or resource blocks.
    assert_eq!(
        schema_of(r#"{"schema":"s","mime":"image/png"}"#, "", true),
        None
    );
    assert_eq!(
        schema_of(r#"{"schema":"m11aj","mime":"text/plain"}"#, "", true),
        None
    );
    // A `_render` projection answers with media too; legacy keeps the
    // reference's record schema.
    let terminals = r#","terminals":[{"long":"svg","entry":"g"}]"#;
    assert_eq!(schema_of(r#"{"schema":"aj"}"#, terminals, true), None);
    assert_eq!(schema_of(r#"{"schema":"m11aj"}"#, terminals, true), None);
    assert!(schema_of(r#"{"schema":"m11aj"}"#, terminals, false).is_some());
    // A return schema that does not parse, or none.
    assert_eq!(modern("m1"), None);
    assert_eq!(schema_of("{}", "", true), None);
}
