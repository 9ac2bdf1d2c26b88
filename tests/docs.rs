//! The documentation runs as printed: `make demo`'s script, every shell block
//! of README.md and `docs/` (against the bundled examples, output compared
//! with what the page shows), and the flag reference against `--help`. The
//! work is done by `tests/docs/check_docs.py` and `examples/demo.py`, which
//! print what differs.

use std::path::Path;
use std::process::Command;

use crate::util;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[track_caller]
fn python(args: &[&str]) {
    let out = util::output(
        Command::new("python3")
            .current_dir(root())
            .args(args)
            .env_remove("MORLOC_MCP_TOKEN"),
    );
    assert_eq!(
        out.code,
        Some(0),
        "python3 {}\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        out.stdout,
        out.stderr
    );
}

fn bin() -> String {
    util::bin().display().to_string()
}

#[test]
fn the_demo_passes() {
    python(&["examples/demo.py", &bin()]);
}

#[test]
fn the_readme_runs_as_shown() {
    python(&["tests/docs/check_docs.py", &bin(), "README.md"]);
}

#[test]
fn the_docs_pages_run_as_shown() {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md"))
        .collect();
    pages.sort();
    let mut args = vec!["tests/docs/check_docs.py".to_string(), bin()];
    args.extend(pages);
    python(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn every_flag_is_documented_and_every_documented_flag_exists() {
    python(&["tests/docs/check_docs.py", &bin(), "--flags"]);
}
