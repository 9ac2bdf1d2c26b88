//! The documentation runs as printed: `make demo`'s script, every shell block
//! of README.md and `docs/` (against the bundled examples, output compared
//! with what the page shows), and the flag reference against `--help`. The
//! work is done by `tests/docs/check_docs.py` and `examples/demo.py`, which
//! print what differs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::util;

/// How long one run of a script may take in all. The scripts bound each step
/// themselves (`check_docs.py`: 180 s a block), and a run is many steps, each
/// starting servers and pools: on a quiet machine the pages take about 15 s,
/// on a loaded one several times that. This limit only catches a hang.
const WHOLE_RUN: Duration = Duration::from_secs(1800);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[track_caller]
fn python(args: &[&str]) {
    let out = util::output_within(
        Command::new("python3")
            .current_dir(root())
            .args(args)
            .env_remove("MORLOC_MCP_TOKEN"),
        WHOLE_RUN,
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

/// The check itself: a page whose output differs from what its command
/// prints fails and says where; ids are carried from the output shown into
/// later commands; a marked block is not run.
#[test]
fn the_check_fails_when_a_page_shows_other_output() {
    let dir = util::TempDir::new();
    let good = dir.write(
        "good.md",
        "# A\n\n```console\n$ echo 'session ia1b2c3d4e5f6.0123456789abcdef0123456789abcdef'\n\
         session i000000000000.ffffffffffffffffffffffffffffffff\n\
         $ S=i000000000000.ffffffffffffffffffffffffffffffff\n\
         $ echo \"$S\" | cut -c15-18\n\
         0123\n```\n\n\
         <!-- not run: it would fail -->\n```sh\nfalse\n```\n",
    );
    let bad = dir.write(
        "bad.md",
        "# B\n\n```console\n$ echo 41\n42\n```\n\n# C\n\n```sh\nfalse\n```\n",
    );
    let run = |page: &std::path::Path| {
        util::output(
            Command::new("python3")
                .current_dir(root())
                .args(["tests/docs/check_docs.py", &bin()])
                .arg(page),
        )
    };
    let passed = run(&good);
    assert_eq!(passed.code, Some(0), "{passed:?}");
    assert!(
        passed.stdout.contains("not run: it would fail"),
        "{passed:?}"
    );
    let failed = run(&bad);
    assert_eq!(failed.code, Some(1), "{failed:?}");
    assert!(
        failed
            .stdout
            .contains("bad.md:3: FAILED: `echo 41` printed something else"),
        "{failed:?}"
    );
    assert!(
        failed
            .stdout
            .contains("bad.md:10: FAILED: `false` exited 1"),
        "{failed:?}"
    );
    // A README.md must link every page of docs/.
    let readme = dir.write("README.md", "# Front door\n\nSee [usage](docs/usage.md).\n");
    let unmapped = run(&readme);
    assert_eq!(unmapped.code, Some(1), "{unmapped:?}");
    assert!(
        unmapped
            .stdout
            .contains("README.md: FAILED: docs/limits.md is not in the map of the docs"),
        "{unmapped:?}"
    );
    assert!(
        !unmapped.stdout.contains("docs/usage.md is not"),
        "{unmapped:?}"
    );
}
