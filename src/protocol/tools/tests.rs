//! Unit tests of the `tools` module (kept apart from the code they test).

use super::*;
use crate::format::schema;

const SHAPES: &str = include_str!("../../../tests/data/shapes/manifest.json");
const SHAPES_TOOLS: &str = include_str!("../../../tests/data/shapes/expected-mcp-tools.json");

fn manifest(commands: &str) -> Manifest {
    let text = format!(
        r#"{{"name":"m","build":{{"path":".","time":1,"morloc_version":"0.98.2"}},"commands":[{commands}]}}"#
    );
    match Manifest::from_json(&text, &mut Vec::new()) {
        Ok(m) => m,
        Err(e) => panic!("test manifest does not load: {e}\n{text}"),
    }
}

fn json(text: &str) -> Value {
    match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => panic!("bad test JSON {text}: {e}"),
    }
}

/// Checks `T(schema)` against compact JSON.
#[track_caller]
fn check_t(schema_text: &str, expected: &str) {
    let parsed = schema::parse(schema_text).unwrap_or_else(|e| panic!("{schema_text}: {e}"));
    assert_eq!(
        serde_json::to_string(&json_schema(&parsed)).unwrap(),
        expected,
        "T({schema_text})"
    );
}

/// Shapes one pure command given its `args` array (and extra command
/// keys) and checks the compact `inputSchema`.
#[track_caller]
fn check_input(args: &str, expected: &str) {
    let m = manifest(&format!(r#"{{"name":"f","type":"pure","args":{args}}}"#));
    let surface = build(&m);
    assert_eq!(surface.notes, Vec::<String>::new());
    let input = &surface.tools[0].json["inputSchema"];
    assert_eq!(
        serde_json::to_string(input).unwrap(),
        expected,
        "args {args}"
    );
}

/// Checks that a command is excluded with exactly this reason.
#[track_caller]
fn check_excluded(command_keys: &str, reason: &str) {
    let m = manifest(&format!(r#"{{"name":"f","type":"pure",{command_keys}}}"#));
    let surface = build(&m);
    assert!(surface.tools.is_empty(), "not excluded: {command_keys}");
    assert_eq!(
        surface.notes,
        vec![format!(
            "morloc mcp: excluding command 'f' from the tool surface ({reason})"
        )]
    );
}

#[test]
fn shapes_fixture_matches_the_reference_bytes() {
    let m = Manifest::from_json(SHAPES, &mut Vec::new()).unwrap();
    let surface = build(&m);
    assert!(surface.notes.is_empty());
    let pretty = serde_json::to_string_pretty(&surface.list_result()).unwrap() + "\n";
    assert_eq!(pretty, SHAPES_TOOLS);
}

#[test]
fn wire_types_map_to_json_schema() {
    check_t("z", r#"{"type":"null"}"#);
    check_t("b", r#"{"type":"boolean"}"#);
    for int in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "j"] {
        check_t(int, r#"{"type":"integer"}"#);
    }
    check_t("f4", r#"{"type":"number"}"#);
    check_t("f8", r#"{"type":"number"}"#);
    check_t("s", r#"{"type":"string"}"#);
    check_t("aj", r#"{"type":"array","items":{"type":"integer"}}"#);
    check_t("a:3f8", r#"{"type":"array","items":{"type":"number"}}"#);
    check_t(
        "t2js",
        r#"{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"minItems":2,"maxItems":2}"#,
    );
    check_t(
        "t0",
        r#"{"type":"array","prefixItems":[],"minItems":0,"maxItems":0}"#,
    );
    check_t(
        "m21xj1y?s",
        r#"{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":["string","null"]}},"required":["x"],"additionalProperties":false}"#,
    );
    check_t(
        "m0",
        r#"{"type":"object","properties":{},"required":[],"additionalProperties":false}"#,
    );
    check_t("?j", r#"{"type":["integer","null"]}"#);
    check_t("??j", r#"{"type":["integer","null"]}"#);
    check_t(
        "?aj",
        r#"{"type":["array","null"],"items":{"type":"integer"}}"#,
    );
    check_t(
        "<dict>at2sj",
        r#"{"type":"array","items":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"minItems":2,"maxItems":2}}"#,
    );
    check_t("<a<b>>f8", r#"{"type":"number"}"#);
    check_t(
        "&4Treem24leafj4kidsa^4Tree",
        r#"{"type":"object","properties":{"leaf":{"type":"integer"},"kids":{"type":"array","items":{"type":"object"}}},"required":["leaf","kids"],"additionalProperties":false}"#,
    );
    check_t(
        "&4Tree?m11x?^4Tree",
        r#"{"type":["object","null"],"properties":{"x":{"type":["object","null"]}},"required":[],"additionalProperties":false}"#,
    );
    check_t("F", r#"{"type":"string"}"#);
    check_t("O", r#"{"type":"string"}"#);
    check_t("I", r#"{"type":"string"}"#);
    check_t(
        "T:21aj1bas",
        r#"{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}}"#,
    );
    check_t(
        "T",
        r#"{"type":"array","items":{"type":"object","properties":{},"required":[],"additionalProperties":false}}"#,
    );
}

#[test]
fn null_union_rules() {
    assert_eq!(
        with_null(json(r#"{"type":"string"}"#)),
        json(r#"{"type":["string","null"]}"#)
    );
    assert_eq!(
        with_null(json(r#"{"type":["a","null"]}"#)),
        json(r#"{"type":["a","null"]}"#)
    );
    assert_eq!(
        with_null(json(r#"{"type":["a"]}"#)),
        json(r#"{"type":["a","null"]}"#)
    );
    assert_eq!(with_null(json("{}")), json("{}"));
    // The type key keeps its first position.
    let v = with_null(json(r#"{"type":"array","items":{}}"#));
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        r#"{"type":["array","null"],"items":{}}"#
    );
}

#[test]
fn positionals() {
    // Unnamed positionals are `_k`, counted over all positionals.
    check_input(
        r#"[{"kind":"pos","schema":"j","name":"origin","metavar":"X"},{"kind":"pos","schema":"s","metavar":"Y"}]"#,
        r#"{"type":"object","properties":{"origin":{"type":"integer"},"_2":{"type":"string"}},"required":["origin","_2"],"additionalProperties":false}"#,
    );
    // An empty name counts as unnamed; `?T` is not required.
    check_input(
        r#"[{"kind":"pos","schema":"?j","name":""}]"#,
        r#"{"type":"object","properties":{"_1":{"type":["integer","null"]}},"required":[],"additionalProperties":false}"#,
    );
    // Missing and unparseable schemas: `{}` and still required.
    check_input(
        r#"[{"kind":"pos"},{"kind":"pos","schema":"q"},{"kind":"pos","schema":null}]"#,
        r#"{"type":"object","properties":{"_1":{},"_2":{},"_3":{}},"required":["_1","_2","_3"],"additionalProperties":false}"#,
    );
    // Descriptions: empty lines dropped, space-only lines kept, no default text.
    check_input(
        r#"[{"kind":"pos","schema":"j","desc":["Start point","","  ","(lat, lon)"]}]"#,
        r#"{"type":"object","properties":{"_1":{"type":"integer","description":"Start point    (lat, lon)"}},"required":["_1"],"additionalProperties":false}"#,
    );
}

#[test]
fn many_wraps_unless_already_an_array() {
    check_input(
        r#"[{"kind":"pos","schema":"aj","many":true},{"kind":"pos","schema":"j","many":true},{"kind":"pos","schema":"?aj","many":true},{"kind":"pos","many":true}]"#,
        r#"{"type":"object","properties":{"_1":{"type":"array","items":{"type":"integer"}},"_2":{"type":"array","items":{"type":"integer"}},"_3":{"type":"array","items":{"type":["array","null"],"items":{"type":"integer"}}},"_4":{"type":"array","items":{}}},"required":["_1","_2","_4"],"additionalProperties":false}"#,
    );
    check_input(
        r#"[{"kind":"opt","schema":"s","long":"tag","many":true,"default":""}]"#,
        r#"{"type":"object","properties":{"tag":{"type":"array","items":{"type":"string"},"description":"(default: )"}},"required":[],"additionalProperties":false}"#,
    );
}

#[test]
fn options_and_flags() {
    check_input(
        r#"[{"kind":"opt","schema":"f8","long":"radius","short":"r","default":"6371.0","desc":["Sphere radius in km"]},
            {"kind":"opt","schema":"s","short":"q","default":"\"box\""},
            {"kind":"opt","schema":"j"},
            {"kind":"flag","long":"miles","short":"m","default":"false","desc":["Report miles"]},
            {"kind":"flag","short":"v"}]"#,
        r#"{"type":"object","properties":{"radius":{"type":"number","description":"Sphere radius in km (default: 6371.0)"},"q":{"type":"string","description":"(default: \"box\")"},"option":{"type":"integer"},"miles":{"type":"boolean","description":"Report miles (default: false)"},"v":{"type":"boolean"}},"required":[],"additionalProperties":false}"#,
    );
}

#[test]
fn unrolled_records() {
    // Fields in entries order; required only without a default, found,
    // and not optional; unknown keys map to `{}`.
    check_input(
        r#"[{"kind":"grp","schema":"<dict>m31aj1b?s1cb","type":"R","group_opt":null,"desc":["ignored"],"entries":[
            {"key":"c","arg":{"kind":"flag","long":"see","default":"false","desc":["C flag"]}},
            {"key":"a","arg":{"kind":"opt","long":"aa","desc":["A"]}},
            {"key":"b","arg":{"kind":"opt","long":"bb"}},
            {"key":"zz","arg":{"kind":"opt","long":"zz"}},
            {"key":"a2","arg":{"kind":"opt","long":"a2","default":""}}]}]"#,
        r#"{"type":"object","properties":{"c":{"type":"boolean","description":"C flag (default: false)"},"a":{"type":"integer","description":"A"},"b":{"type":["string","null"]},"zz":{},"a2":{"description":"(default: )"}},"required":["a"],"additionalProperties":false}"#,
    );
    // An unparseable group schema advertises nothing but keeps its slot.
    let m = manifest(
        r#"{"name":"f","type":"pure","args":[{"kind":"pos","schema":"j"},{"kind":"grp","schema":"m9","entries":[{"key":"a","arg":{"kind":"opt","long":"a","default":"1"}}]}]}"#,
    );
    let tool = &build(&m).tools[0];
    assert_eq!(tool.properties.len(), 1);
    assert_eq!(tool.slots.len(), 2);
    assert_eq!(
        tool.slots[1],
        Slot::Record(RecordSlot {
            whole: None,
            fields: vec![Field {
                key: "a".into(),
                property: "a".into(),
                default: json("1")
            }],
            fields_exposed: false
        })
    );
    // A record schema that parses but is not a record: every field is `{}`.
    check_input(
        r#"[{"kind":"grp","schema":"j","entries":[{"key":"a","arg":{"kind":"opt","long":"a"}}]}]"#,
        r#"{"type":"object","properties":{"a":{}},"required":[],"additionalProperties":false}"#,
    );
}

#[test]
fn whole_object_records() {
    check_input(
        r#"[{"kind":"grp","schema":"<dict>m21aj1b?s","type":"SysConfig","group_opt":{"long":"config"},"desc":["The config"],"entries":[
            {"key":"a","arg":{"kind":"opt","long":"aa","default":"1"}}]}]"#,
        r#"{"type":"object","properties":{"sysconfig":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":["string","null"]}},"required":["a"],"additionalProperties":false,"description":"The config"}},"required":[],"additionalProperties":false}"#,
    );
    check_input(
        r#"[{"kind":"grp","schema":"m9","group_opt":{"short":"c"},"entries":[]}]"#,
        r#"{"type":"object","properties":{"group":{"type":"object"}},"required":[],"additionalProperties":false}"#,
    );
}

#[test]
fn render_property_and_output_schema() {
    let m = manifest(
        r#"{"name":"plot","type":"pure","args":[{"kind":"pos","schema":"af8"}],"return":{"schema":"<x>m11aj"},
            "terminals":[{"short":"s","long":"svg","entry":"mlcp_plot_svg","render":true,"default":true},{"long":"png","entry":"nowhere"}]},
           {"name":"mlcp_plot_svg","type":"pure","internal":true,"return":{"schema":"s","mime":"image/svg+xml"}}"#,
    );
    let surface = build(&m);
    assert_eq!(surface.tools.len(), 1);
    let tool = &surface.tools[0];
    assert_eq!(
        serde_json::to_string(&tool.json).unwrap(),
        r#"{"name":"plot","description":"","inputSchema":{"type":"object","properties":{"_1":{"type":"array","items":{"type":"number"}},"_render":{"type":"string","enum":["raw","svg","png"],"default":"raw","description":"Output projection: 'raw' returns the underlying typed value; a renderer name returns that projection (e.g. an image)."}},"required":["_1"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}"#
    );
    assert_eq!(
        tool.renders,
        vec![
            Render {
                name: "svg".into(),
                entry: "mlcp_plot_svg".into(),
                command: Some(1)
            },
            Render {
                name: "png".into(),
                entry: "nowhere".into(),
                command: None
            },
        ]
    );
    assert_eq!(tool.properties.last().map(|p| p.feeds), Some(Feeds::Render));
}

#[test]
fn output_schema_only_for_records() {
    for (ret, has) in [
        ("m11aj", true),
        ("&1Rm11aj", true),
        ("<d>m0", true),
        ("?m11aj", false),
        ("am11aj", false),
        ("j", false),
        ("z", false),
        ("", false),
        ("m1", false),
    ] {
        let m = manifest(&format!(
            r#"{{"name":"f","type":"pure","return":{{"schema":"{ret}"}}}}"#
        ));
        let tool = &build(&m).tools[0];
        assert_eq!(tool.json.get("outputSchema").is_some(), has, "return {ret}");
    }
}

#[test]
fn descriptions_join_lines_verbatim() {
    let m =
        manifest(r#"{"name":"f","type":"pure","desc":["A","","B "]},{"name":"g","type":"pure"}"#);
    let surface = build(&m);
    assert_eq!(surface.tools[0].json["description"], "A\n\nB ");
    assert_eq!(surface.tools[1].json["description"], "");
    let keys: Vec<&String> = surface.tools[1].json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "description", "inputSchema"]);
}

#[test]
fn exclusions() {
    check_excluded(
        r#""args":[{"kind":"pos","schema":"s","stdin":true}]"#,
        "reads from @stdin",
    );
    check_excluded(
        r#""args":[{"kind":"pos","schema":"T:11aj"}]"#,
        "argument has an Arrow Table or stream-handle type",
    );
    check_excluded(
        r#""args":[{"kind":"opt","schema":"am11xF","long":"x"}]"#,
        "argument has an Arrow Table or stream-handle type",
    );
    check_excluded(
        r#""args":[{"kind":"grp","schema":"m11xO","entries":[]}]"#,
        "argument has an Arrow Table or stream-handle type",
    );
    check_excluded(
        r#""return":{"schema":"?I"}"#,
        "return has an Arrow Table or stream-handle type",
    );
    // Arguments are checked in order, stdin before the schema of the same arg.
    check_excluded(
        r#""args":[{"kind":"pos","schema":"T","stdin":true},{"kind":"pos","schema":"s","stdin":true}]"#,
        "reads from @stdin",
    );
    check_excluded(
        r#""args":[{"kind":"pos","schema":"F"},{"kind":"pos","schema":"s","stdin":true}]"#,
        "argument has an Arrow Table or stream-handle type",
    );
    // Argument rules come before the return rule.
    check_excluded(
        r#""args":[{"kind":"pos","stdin":true}],"return":{"schema":"T"}"#,
        "reads from @stdin",
    );
    // Collisions between every kind of property name.
    check_excluded(
        r#""args":[{"kind":"pos","schema":"j","name":"x"},{"kind":"opt","schema":"j","long":"x"}]"#,
        "property name collision on 'x'",
    );
    check_excluded(
        r#""args":[{"kind":"pos","schema":"j"},{"kind":"flag","long":"_1"}]"#,
        "property name collision on '_1'",
    );
    check_excluded(
        r#""args":[{"kind":"flag","short":"x"},{"kind":"grp","schema":"m11xj","entries":[{"key":"x","arg":{"kind":"opt"}}]}]"#,
        "property name collision on 'x'",
    );
    check_excluded(
        r#""args":[{"kind":"opt","long":"cfg"},{"kind":"grp","schema":"m0","type":"Cfg","group_opt":{},"entries":[]}]"#,
        "property name collision on 'cfg'",
    );
    check_excluded(
        r#""args":[{"kind":"opt","long":"_render"}],"terminals":[{"long":"svg","entry":"x"}]"#,
        "property name collision on '_render'",
    );
    check_excluded(
        r#""args":[{"kind":"opt"},{"kind":"flag"}]"#,
        "property name collision on 'option'",
    );
}

#[test]
fn unservable_schemas_that_do_not_parse_are_served() {
    let m = manifest(
        r#"{"name":"f","type":"pure","args":[{"kind":"pos","schema":"T:"}],"return":{"schema":"Fx"}}"#,
    );
    assert_eq!(build(&m).tools.len(), 1);
    // Flags and group entries carry no schema of their own.
    let m = manifest(
        r#"{"name":"f","type":"pure","args":[{"kind":"grp","schema":"m11xj","entries":[{"key":"x","arg":{"kind":"opt","schema":"F"}}]}]}"#,
    );
    assert_eq!(build(&m).tools.len(), 1);
}

#[test]
fn internal_commands_are_skipped_silently_and_notes_keep_order() {
    let m = manifest(
        r#"{"name":"a","type":"pure","internal":true,"args":[{"kind":"pos","stdin":true}]},
           {"name":"b","type":"pure","args":[{"kind":"pos","stdin":true}]},
           {"name":"c","type":"pure"},
           {"name":"d","type":"pure","return":{"schema":"T"}}"#,
    );
    let surface = build(&m);
    assert_eq!(
        surface
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["c"]
    );
    assert_eq!(surface.tools[0].command, 2);
    assert_eq!(surface.notes.len(), 2);
    assert!(surface.notes[0].contains("'b'"));
    assert!(surface.notes[1].contains("'d'"));
}

#[test]
fn duplicate_tool_names_are_listed_and_the_later_answers() {
    let m = manifest(r#"{"name":"f","type":"pure"},{"name":"f","type":"pure","desc":["second"]}"#);
    let surface = build(&m);
    assert_eq!(surface.tools.len(), 2);
    assert_eq!(surface.find_index("f"), Some(1));
    assert_eq!(surface.find("f").map(|t| t.command), Some(1));
    assert!(surface.find("g").is_none());
}

#[test]
fn rename_keeps_key_order() {
    let m = manifest(r#"{"name":"f","type":"pure"}"#);
    let mut surface = build(&m);
    surface.tools[0].rename("geo__f".into());
    assert_eq!(
        serde_json::to_string(&surface.tools[0].json).unwrap(),
        r#"{"name":"geo__f","description":"","inputSchema":{"type":"object","properties":{},"required":[],"additionalProperties":false}}"#
    );
    assert!(surface.find("f").is_none());
    assert_eq!(surface.find_index("geo__f"), Some(0));
}

#[test]
fn slots_and_feeds_follow_the_manifest() {
    let m = Manifest::from_json(SHAPES, &mut Vec::new()).unwrap();
    let surface = build(&m);
    let scale = surface.find("scale").unwrap();
    assert_eq!(
        scale.slots,
        vec![
            Slot::Value {
                key: "_1".into(),
                default: Value::Null
            },
            Slot::Value {
                key: "factor".into(),
                default: json("2")
            },
        ]
    );
    let flat = surface.find("configFlat").unwrap();
    assert_eq!(
        flat.properties
            .iter()
            .map(|p| (p.name.as_str(), p.feeds))
            .collect::<Vec<_>>(),
        [
            ("tmpDir", Feeds::Field { arg: 0, field: 0 }),
            ("numThreads", Feeds::Field { arg: 0, field: 1 }),
            ("removeCaches", Feeds::Field { arg: 0, field: 2 }),
        ]
    );
    assert_eq!(
        flat.slots,
        vec![Slot::Record(RecordSlot {
            whole: None,
            fields: vec![
                Field {
                    key: "tmpDir".into(),
                    property: "tmpDir".into(),
                    default: json(r#""/tmp""#)
                },
                Field {
                    key: "numThreads".into(),
                    property: "numThreads".into(),
                    default: json("1")
                },
                Field {
                    key: "removeCaches".into(),
                    property: "removeCaches".into(),
                    default: json("false")
                },
            ],
            fields_exposed: true,
        })]
    );
    let whole = surface.find("configWhole").unwrap();
    assert!(
        matches!(&whole.slots[0], Slot::Record(r) if r.whole.as_deref() == Some("configwhole"))
    );
    assert_eq!(whole.required, Vec::<String>::new());
}

#[test]
fn modern_schemas_define_recursive_types_once() {
    let tree = crate::format::schema::parse("&4Treem25valuej8childrena^4Tree").unwrap();
    // The reference's way: the back-reference is a bare object.
    assert_eq!(
        json_schema(&tree).to_string(),
        r#"{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"type":"object"}}},"required":["value","children"],"additionalProperties":false}"#
    );
    let mut e = Emit::modern();
    assert_eq!(
        emit(&tree, &mut e).to_string(),
        r##"{"$ref":"#/$defs/Tree"}"##
    );
    let defs = e.take_defs().unwrap();
    assert_eq!(
        serde_json::Value::Object(defs).to_string(),
        r##"{"Tree":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/Tree"}}},"required":["value","children"],"additionalProperties":false}}"##
    );
    // An optional recursive type: the reference or null.
    let maybe = crate::format::schema::parse("&4Listm24headj4tail?^4List").unwrap();
    let mut e = Emit::modern();
    emit(&maybe, &mut e);
    assert_eq!(
        e.take_defs().unwrap()["List"]["properties"]["tail"].to_string(),
        r##"{"anyOf":[{"$ref":"#/$defs/List"},{"type":"null"}]}"##
    );
    // A declaration that does not refer to itself stays inline.
    let point = crate::format::schema::parse("&5Pointm21xj1yj").unwrap();
    let mut e = Emit::modern();
    assert_eq!(emit(&point, &mut e), json_schema(&point));
    assert!(e.take_defs().is_none());
}
