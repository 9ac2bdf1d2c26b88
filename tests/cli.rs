//! End-to-end tests of the command line: the `tools` and `config` outputs
//! through every target form (manifest, build directory, launcher script,
//! the `morloc-nexus` spellings), usage errors, and bad manifests.

use std::path::Path;

use serde_json::Value;

use crate::util::{self, Output, TempDir};

const SHAPES_TOOLS: &str = include_str!("data/shapes/expected-mcp-tools.json");

fn shapes_text() -> String {
    util::read(&util::data("shapes/manifest.json"))
}

fn shapes_manifest() -> String {
    util::data("shapes/manifest.json")
        .to_string_lossy()
        .into_owned()
}

/// A launcher script of the form the Morloc compiler writes.
fn launcher(dir: &TempDir, manifest: &Path) -> String {
    let quoted = manifest.to_string_lossy().replace('\'', "'\\''");
    let script = format!(
        "#!/bin/sh\nexport MORLOC_PROG_NAME=\"$0\"\nexec morloc-nexus run '{quoted}' \"$@\"\n"
    );
    dir.write_executable("prog", script)
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
fn assert_tools(out: &Output, what: &str) {
    assert_eq!(out.code, Some(0), "{what}: {}", out.stderr);
    assert_eq!(out.stderr, "", "{what}");
    util::assert_text_eq(SHAPES_TOOLS, &out.stdout, what);
}

/// One line on stderr, nothing on stdout, the given status; returns the line.
#[track_caller]
fn one_line_error(out: &Output, code: i32, what: &str) -> String {
    assert_eq!(out.code, Some(code), "{what}: stderr {:?}", out.stderr);
    assert_eq!(out.stdout, "", "{what}");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{what}: stderr {:?}", out.stderr);
    assert!(
        lines[0].starts_with("morloc-mcp: "),
        "{what}: {:?}",
        lines[0]
    );
    lines[0].to_string()
}

#[track_caller]
fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn tools_through_a_launcher_script() {
    let dir = TempDir::new();
    let script = launcher(&dir, &util::data("shapes/manifest.json"));
    assert_tools(&util::run(["tools", &script]), "tools <launcher>");
}

#[test]
fn tools_through_a_launcher_with_a_quote_in_its_path() {
    let dir = TempDir::new();
    let manifest = dir.write("it's build/manifest.json", shapes_text());
    let script = launcher(&dir, &manifest);
    assert_tools(
        &util::run(["tools", &script]),
        "tools <launcher with quote>",
    );
}

#[test]
fn launcher_without_a_manifest_path() {
    let dir = TempDir::new();
    let script = dir.write_executable("prog", "#!/bin/sh\nexec morloc-nexus run \"$@\"\n");
    let out = util::run(["tools", &script.to_string_lossy()]);
    let line = one_line_error(&out, 1, "launcher without a path");
    assert!(
        line.contains("looks like a morloc launcher but no manifest path was found"),
        "{line}"
    );
    assert!(line.contains(&*script.to_string_lossy()), "{line}");
}

#[test]
fn morloc_nexus_spellings() {
    let dir = TempDir::new();
    let nexus = dir.symlink(&util::bin(), "morloc-nexus");
    let manifest = shapes_manifest();
    let run_nexus = |args: &[&str]| {
        let mut command = std::process::Command::new(&nexus);
        command.args(args).env_remove("MORLOC_MCP_TOKEN");
        util::output(&mut command)
    };
    assert_tools(
        &run_nexus(&["run", &manifest, "--mcp-tools"]),
        "morloc-nexus run <m> --mcp-tools",
    );
    assert_tools(
        &run_nexus(&["run", "--mcp-tools", &manifest]),
        "morloc-nexus run --mcp-tools <m>",
    );
    let config = run_nexus(&["run", &manifest, "--mcp-config"]);
    assert_eq!(config.code, Some(0), "{}", config.stderr);
    assert_eq!(
        parse_json(&config.stdout)["mcpServers"]["main"]["args"][0],
        "mcp"
    );

    // The launcher itself, finding morloc-nexus on PATH.
    let script = launcher(&dir, &util::data("shapes/manifest.json"));
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = util::output(
        std::process::Command::new(&script)
            .arg("--mcp-tools")
            .env("PATH", &path),
    );
    assert_tools(&out, "./prog --mcp-tools");
    let out = util::output(
        std::process::Command::new(&script)
            .arg("--mcp-config")
            .env("PATH", &path),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    for (args, needle) in [
        (vec!["run", &manifest, "addOne", "1"], "only the MCP modes"),
        (
            vec!["run", &manifest, "--json-help"],
            "--json-help is not provided",
        ),
        (vec!["run", "--mcp-tools"], "require a program target"),
        (vec!["daemon", &manifest], "only the MCP modes"),
        (vec![], "only the MCP modes"),
        (
            vec!["mcp", &manifest, "--bogus"],
            "invalid option '--bogus'",
        ),
    ] {
        let out = run_nexus(&args);
        let line = one_line_error(&out, 2, &format!("morloc-nexus {args:?}"));
        assert!(line.contains(needle), "morloc-nexus {args:?}: {line}");
    }
    let help = run_nexus(&["--help"]);
    assert_eq!(help.code, Some(0));
    assert!(help.stdout.contains("--mcp-tools"), "{}", help.stdout);
}

#[test]
fn config_prints_absolute_paths() {
    let dir = TempDir::new();
    dir.write("build/manifest.json", shapes_text());
    // A relative build-directory target, resolved against the working directory.
    let out = util::output(util::cmd(["config", "build"]).current_dir(dir.path()));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stderr, "");
    assert!(out.stdout.ends_with("}\n"));
    let config = parse_json(&out.stdout);
    let server = &config["mcpServers"]["main"];
    let command = server["command"].as_str().unwrap_or_default();
    assert!(Path::new(command).is_absolute(), "{command}");
    assert_eq!(
        std::fs::canonicalize(command).ok(),
        std::fs::canonicalize(util::bin()).ok()
    );
    let canonical = std::fs::canonicalize(dir.join("build/manifest.json")).unwrap_or_default();
    assert_eq!(
        server["args"],
        serde_json::json!([
            "mcp",
            canonical.to_string_lossy(),
            "--max-result-chars",
            "80000"
        ])
    );
    // Exactly this shape, pretty-printed.
    let expected = format!(
        "{{\n  \"mcpServers\": {{\n    \"main\": {{\n      \"command\": {},\n      \"args\": [\n        \"mcp\",\n        {},\n        \"--max-result-chars\",\n        \"80000\"\n      ]\n    }}\n  }}\n}}\n",
        Value::from(command),
        Value::from(canonical.to_string_lossy().into_owned())
    );
    util::assert_text_eq(&expected, &out.stdout, "config output");
}

#[test]
fn help_and_version() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["mcp", "--help"],
        &["router", "-h"],
        &["tools", "--help"],
        &["config", "-h"],
    ] {
        let out = util::run(args);
        assert_eq!(out.code, Some(0), "{args:?}");
        assert_eq!(out.stderr, "", "{args:?}");
        assert!(
            out.stdout.starts_with("morloc-mcp") || out.stdout.starts_with("Usage:"),
            "{args:?}: {}",
            out.stdout
        );
    }
    let out = util::run(["mcp", "--help"]);
    for option in [
        "--http-port",
        "--http-host",
        "--auth-token",
        "--allow-no-auth",
        "--call-timeout",
        "--allow-origin",
    ] {
        assert!(out.stdout.contains(option), "mcp --help lacks {option}");
    }
    assert!(
        !out.stdout.contains("--session-ttl"),
        "the test-only option is hidden"
    );
    let out = util::run(["--version"]);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.starts_with("morloc-mcp "), "{}", out.stdout);
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let m = shapes_manifest();
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["serve"],
        vec!["--bogus"],
        vec!["tools"],
        vec!["tools", &m, "extra"],
        vec!["tools", &m, "--http-port", "1"],
        vec!["config"],
        vec!["mcp"],
        vec!["mcp", &m, &m],
        vec!["mcp", &m, "--http-port"],
        vec!["mcp", &m, "--http-port", "65536"],
        vec!["mcp", &m, "--http-port", "port"],
        vec!["mcp", &m, "--auth-token", ""],
        vec!["mcp", &m, "--call-timeout", "-3"],
        vec!["mcp", &m, "--call-timeout", "soon"],
        vec!["mcp", &m, "--session-ttl", "x"],
        vec!["mcp", &m, "--allow-no-auth=1"],
        vec!["mcp", &m, "-x"],
        vec!["router", &m],
        vec!["router", "--http-port", "8000"],
    ];
    for args in cases {
        let out = util::run(&args);
        one_line_error(&out, 2, &format!("{args:?}"));
    }
}

/// Manifest problems are start-up failures: exit 1, one line naming the file
/// and the field.
#[test]
fn bad_manifests_name_the_problem() {
    let dir = TempDir::new();
    let build = r#""build":{"path":".","time":1,"morloc_version":"0.98.2"}"#;
    let cases = [
        (
            "not-json.json",
            "this is not json".to_string(),
            "not valid JSON",
        ),
        ("empty.json", String::new(), "not valid JSON"),
        ("array.json", "[]".to_string(), "expected an object"),
        (
            "no-name.json",
            format!("{{{build}}}"),
            "field 'name': missing field",
        ),
        (
            "no-build.json",
            r#"{"name":"m"}"#.to_string(),
            "field 'build': missing field",
        ),
        (
            "bad-time.json",
            r#"{"name":"m","build":{"path":".","time":"now","morloc_version":"0.98.2"}}"#
                .to_string(),
            "field 'build.time'",
        ),
        (
            "bad-kind.json",
            format!(
                r#"{{"name":"m",{build},"commands":[{{"name":"f","type":"pure","args":[{{"kind":"zap"}}]}}]}}"#
            ),
            "commands[0].args[0].kind",
        ),
        (
            "null-desc.json",
            format!(
                r#"{{"name":"m",{build},"commands":[{{"name":"f","type":"pure","desc":null}}]}}"#
            ),
            "commands[0].desc",
        ),
    ];
    for (name, text, needle) in cases {
        let path = dir.write(name, text);
        let out = util::run(["tools", &path.to_string_lossy()]);
        let line = one_line_error(&out, 1, name);
        assert!(line.contains(needle), "{name}: {line}");
        assert!(
            line.contains(name),
            "{name}: the line should name the file: {line}"
        );
    }
    let missing = dir.join("absent.json");
    let line = one_line_error(
        &util::run(["tools", &missing.to_string_lossy()]),
        1,
        "missing file",
    );
    assert!(
        line.contains("absent.json") && line.contains("No such file"),
        "{line}"
    );
    std::fs::create_dir_all(dir.join("nothing-here")).unwrap_or_default();
    let line = one_line_error(
        &util::run(["config", &dir.join("nothing-here").to_string_lossy()]),
        1,
        "empty dir",
    );
    assert!(line.contains("directory without a manifest.json"), "{line}");
}

#[test]
fn unparseable_schemas_are_still_served() {
    let dir = TempDir::new();
    let path = dir.write(
        "manifest.json",
        r#"{"name":"m","build":{"path":".","time":1,"morloc_version":"0.98.2"},"commands":[
            {"name":"f","type":"pure","args":[{"kind":"pos","schema":"%%"}],"return":{"schema":"m9"}}]}"#,
    );
    let out = util::run(["tools", &path.to_string_lossy()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let tools = parse_json(&out.stdout);
    assert_eq!(
        tools["tools"][0]["inputSchema"]["properties"]["_1"],
        serde_json::json!({})
    );
    assert!(tools["tools"][0].get("outputSchema").is_none());
}

#[test]
fn version_warnings_are_one_line_each() {
    let dir = TempDir::new();
    let text = shapes_text().replace("\"0.98.2\"", "\"0.99.1\"");
    let path = dir.write("manifest.json", text);
    let out = util::run(["tools", &path.to_string_lossy()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("morloc-mcp: warning: ") && lines[0].contains("0.99.1"),
        "{}",
        lines[0]
    );
}

#[test]
fn exclusion_notes_go_to_stderr() {
    let out = util::run([
        "tools",
        &util::data("tools/geo/manifest.json").to_string_lossy(),
    ]);
    assert_eq!(out.code, Some(0));
    assert_eq!(
        out.stderr,
        "morloc mcp: excluding command 'readTrack' from the tool surface (reads from @stdin)\n"
    );
    parse_json(&out.stdout);
}
