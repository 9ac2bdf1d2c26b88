//! Golden tests of the tool surface: `morloc-mcp tools <manifest>` must print
//! exactly the expected `tools/list` payload and exclusion notes.
//!
//! Each case is a directory holding `manifest.json`,
//! `expected-mcp-tools.json` (stdout) and `expected-stderr.txt`:
//! `tests/data/shapes` (the reference's own output for its test program) and
//! every directory under `tests/data/tools` (`geo` is the worked example of
//! the surface specification, with the reference's observed output).

use std::fs;
use std::path::PathBuf;

use crate::util::{self, check_golden};

fn cases() -> Vec<PathBuf> {
    let mut cases = vec![util::data("shapes")];
    let mut tools: Vec<PathBuf> = match fs::read_dir(util::data("tools")) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) => panic!("cannot list tests/data/tools: {e}"),
    };
    tools.sort();
    cases.extend(tools);
    cases
}

#[test]
fn tools_output_matches_golden_files() {
    let cases = cases();
    assert!(cases.len() >= 3, "golden cases missing: {cases:?}");
    for case in cases {
        let out = util::run([&"tools".into(), &case.join("manifest.json")]);
        assert_eq!(out.code, Some(0), "{}: {}", case.display(), out.stderr);
        check_golden(&case.join("expected-mcp-tools.json"), &out.stdout);
        check_golden(&case.join("expected-stderr.txt"), &out.stderr);
    }
}

/// The payload is the same whatever the target form: the manifest, its
/// build directory, a relative path.
#[test]
fn target_forms_give_the_same_payload() {
    let expected = util::read(&util::data("shapes/expected-mcp-tools.json"));
    let out = util::run(["tools", &util::data("shapes").to_string_lossy()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    util::assert_text_eq(&expected, &out.stdout, "tools via build directory");
    let out =
        util::output(util::cmd(["tools", "shapes/manifest.json"]).current_dir(util::data("")));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    util::assert_text_eq(&expected, &out.stdout, "tools via relative path");
}
