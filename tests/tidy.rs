//! Tidy checks: house rules from the style guide that a compiler does not
//! enforce, run as ordinary tests so `cargo test` is the whole gate.
//!
//! Each check collects every offender before failing, so one run lists all
//! that needs fixing. Needles that would trip a check on this file itself are
//! assembled with `concat!`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Source files above this many lines should be split.
const MAX_LINES: usize = 1200;
/// The I/O edge is held tighter: the reactor's concerns each stay small.
const MAX_EDGE_LINES: usize = 800;

/// Committed paths scanned for machine-specific absolute paths.
const PORTABLE: &[&str] = &[
    "src",
    "tests",
    "examples",
    "bench",
    "fuzz",
    "README.md",
    "docs",
    "ARCHITECTURE.md",
    "Makefile",
    ".ci",
];

/// Under [`PORTABLE`] but exempt: reference bytes and seeds derived from them.
const NOT_PORTABLE_CHECKED: &[&str] = &["tests/data/", "fuzz/seeds/"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir` (relative to the crate root), sorted.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Fails listing every offender, if there are any.
#[track_caller]
fn check(rule: &str, offenders: Vec<String>) {
    assert!(
        offenders.is_empty(),
        "{rule}; {} offender(s):\n  {}",
        offenders.len(),
        offenders.join("\n  ")
    );
}

#[test]
fn source_files_start_with_a_module_doc() {
    let offenders = rust_files("src")
        .into_iter()
        .filter(|p| !read(p).starts_with("//!"))
        .map(|p| rel(&p))
        .collect();
    check(
        "every src file must start with a `//!` paragraph",
        offenders,
    );
}

#[test]
fn no_trailing_whitespace_or_tabs() {
    let mut offenders = Vec::new();
    for path in rust_files("src").into_iter().chain(rust_files("tests")) {
        for (n, line) in read(&path).lines().enumerate() {
            if line.contains('\t') {
                offenders.push(format!("{}:{}: tab", rel(&path), n + 1));
            } else if line.ends_with(char::is_whitespace) {
                offenders.push(format!("{}:{}: trailing whitespace", rel(&path), n + 1));
            }
        }
    }
    check("no trailing whitespace or tabs in Rust files", offenders);
}

/// The server's stderr is written by its one logger (`src/edge/log.rs`), so
/// every line has the chosen format (`--log-format json`: one object per
/// line) and outside strings in it are escaped. Test code may print.
#[test]
fn only_the_logger_writes_to_stderr() {
    let needles = [
        concat!("eprint", "ln!"),
        concat!("eprint", "!("),
        concat!("io::", "stderr"),
        concat!("STDERR_", "FILENO"),
        concat!("dbg", "!("),
    ];
    let mut offenders = Vec::new();
    for path in rust_files("src") {
        let name = rel(&path);
        let test_code = path.file_name().is_some_and(|n| n == "tests.rs")
            || path.components().any(|c| c.as_os_str() == "tests");
        if name == "src/edge/log.rs" || test_code {
            continue;
        }
        // Test modules at the bottom of a file may print.
        let text = read(&path);
        let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            // fd 1 is pointed at stderr at start-up: the one other use.
            if name == "src/edge/proc.rs" && line.contains("dup2(") {
                continue;
            }
            if let Some(needle) = needles.iter().find(|needle| line.contains(*needle)) {
                offenders.push(format!("{name}:{}: {needle}", n + 1));
            }
        }
    }
    check(
        "only src/edge/log.rs writes to stderr: use edge::log (and protocol::log::Untrusted for outside strings)",
        offenders,
    );
}

#[test]
fn no_should_panic_or_ignore() {
    let needles = [concat!("#[", "should_panic"), concat!("#[", "ignore")];
    let mut offenders = Vec::new();
    for path in rust_files("src").into_iter().chain(rust_files("tests")) {
        for (n, line) in read(&path).lines().enumerate() {
            if let Some(needle) = needles.iter().find(|needle| line.contains(*needle)) {
                offenders.push(format!("{}:{}: {needle}]", rel(&path), n + 1));
            }
        }
    }
    check(
        "tests must not be ignored or expect a panic: assert on the Err or the current behaviour",
        offenders,
    );
}

#[test]
fn no_oversized_source_files() {
    // Unit-test modules kept in their own `tests.rs` are data tables; the
    // limit is about code a reader has to hold in mind.
    let offenders = rust_files("src")
        .into_iter()
        .filter(|p| p.file_name().is_none_or(|n| n != "tests.rs"))
        .filter_map(|p| {
            let lines = read(&p).lines().count();
            let max = if rel(&p).starts_with("src/edge/") {
                MAX_EDGE_LINES
            } else {
                MAX_LINES
            };
            (lines > max).then(|| format!("{}: {lines} lines (at most {max})", rel(&p)))
        })
        .collect();
    check(
        &format!("src files must not exceed {MAX_LINES} lines ({MAX_EDGE_LINES} in src/edge)"),
        offenders,
    );
}

/// The committed files under `paths`, or every file there when the tree is
/// not a git checkout.
fn committed_files(paths: &[&str]) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "-z", "--"])
        .args(paths)
        .output();
    if let Ok(out) = listed {
        if out.status.success() {
            return out
                .stdout
                .split(|&b| b == 0)
                .filter(|name| !name.is_empty())
                .map(|name| root().join(String::from_utf8_lossy(name).as_ref()))
                .collect();
        }
    }
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = paths.iter().map(|p| root().join(p)).collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            let skip = [
                "target",
                "corpus",
                "artifacts",
                "__pycache__",
                "node_modules",
                ".cache",
            ];
            if path
                .file_name()
                .is_some_and(|n| skip.iter().any(|s| n == *s))
            {
                continue;
            }
            if let Ok(entries) = fs::read_dir(&path) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        } else if path.is_file() {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn no_machine_specific_paths() {
    let needles = [
        concat!("/", "work/"),
        concat!("/", "home/"),
        concat!("/", "root/"),
        concat!("/", "Users/"),
    ];
    let mut offenders = Vec::new();
    for path in committed_files(PORTABLE) {
        let name = rel(&path);
        if NOT_PORTABLE_CHECKED
            .iter()
            .any(|prefix| name.starts_with(prefix))
        {
            continue;
        }
        // Binary files are not text; a missing file is a deletion not yet committed.
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(needle) = needles.iter().find(|needle| line.contains(*needle)) {
                offenders.push(format!("{name}:{}: {needle}", n + 1));
            }
        }
    }
    check(
        "committed files must not name paths of one machine; locate files from the crate root",
        offenders,
    );
}

#[test]
fn layers_import_only_downwards() {
    // `src/lib.rs` lists the layers bottom up; a module may use its own layer
    // and the ones before it. `musl` stands apart and uses none of them.
    let layers: &[(&str, &[&str])] = &[
        ("format", &["protocol", "edge", "musl"]),
        ("protocol", &["edge", "musl"]),
        ("edge", &["musl"]),
        ("musl", &["format", "protocol", "edge"]),
    ];
    let mut offenders = Vec::new();
    for (layer, forbidden) in layers {
        for path in rust_files(&format!("src/{layer}"))
            .into_iter()
            .chain([root().join(format!("src/{layer}.rs"))])
        {
            for (n, line) in read(&path).lines().enumerate() {
                for above in *forbidden {
                    let needle = format!("{}{above}::", concat!("crate", "::"));
                    let grouped = format!("{}{above}", concat!("crate", "::{"));
                    if line.contains(&needle) || line.contains(&grouped) {
                        offenders.push(format!("{}:{}: uses {above}", rel(&path), n + 1));
                    }
                }
            }
        }
    }
    check(
        "a layer may import only from itself and the layers below it",
        offenders,
    );
}

/// The optional real-runtime suite: the only tests and scripts that may read
/// the shared directory beside the project, because they skip with one line
/// when it is absent. Each entry is a path prefix and the start of the lines
/// allowed in it (empty: the whole file). The benchmarks that use the real
/// pools find them through `bench/programs.py` and skip the same way.
const REAL_SUITE: &[(&str, &str)] = &[("tests/real/", "")];

#[test]
fn only_the_real_runtime_suite_reads_the_shared_directory() {
    // A clone on its own has no shared directory beside it, so every other
    // test and script must pass without it: fixtures are copied into
    // `tests/data/`. Prose (Markdown) may mention it.
    let needle = concat!("..", "/shared");
    let mut offenders = Vec::new();
    let mut scanned = PORTABLE.to_vec();
    scanned.push("e2e");
    for path in committed_files(&scanned) {
        let name = rel(&path);
        if name.ends_with(".md")
            || NOT_PORTABLE_CHECKED
                .iter()
                .any(|prefix| name.starts_with(prefix))
        {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let allowed = REAL_SUITE
                .iter()
                .any(|(prefix, start)| name.starts_with(prefix) && line.starts_with(start));
            if line.contains(needle) && !allowed {
                offenders.push(format!("{name}:{}", n + 1));
            }
        }
    }
    check(
        "only the real-runtime suite may read the shared directory beside the project; copy fixtures into tests/data/",
        offenders,
    );
}

/// What an integration test may not write outside the support library (see
/// `tests/support/time.rs` for why and for what to use instead).
const CLOCK_NEEDLES: &[&str] = &[
    concat!("sle", "ep("),
    concat!("Inst", "ant"),
    concat!(".elap", "sed()"),
    concat!("System", "Time"),
];

/// The rule [`CLOCK_NEEDLES`] enforces, as the failure message states it.
const CLOCK_RULE: &str = "integration tests (tests/*.rs) neither sleep to wait for something nor \
     compare a wall-clock time against a bound: wait for a readiness signal with \
     support::time::wait_until / wait_for / poll_until, assert order and cause instead of speed \
     (e.g. support::trace::CallTrace shows when calls ran in the pool), and touch the clock only \
     through support::time (Stopwatch::assert_at_least for a lower bound, \
     Stopwatch::assert_within_budget for a 10x budget, pace for a client's own deliberate gaps)";

/// The lines of `text` (from file `name`) that use the clock directly.
/// Comments are skipped.
fn clock_offenders(name: &str, text: &str) -> Vec<String> {
    let mut offenders = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if let Some(needle) = CLOCK_NEEDLES.iter().find(|needle| code.contains(*needle)) {
            offenders.push(format!("{name}:{}: {needle}", n + 1));
        }
    }
    offenders
}

#[test]
fn integration_tests_take_time_only_through_the_support_library() {
    let mut offenders = Vec::new();
    for path in rust_files("tests") {
        let name = rel(&path);
        if name.starts_with("tests/support/") || name == "tests/tidy.rs" {
            continue;
        }
        offenders.extend(clock_offenders(&name, &read(&path)));
    }
    check(CLOCK_RULE, offenders);
}

#[test]
fn the_clock_rule_catches_sleeps_bounds_and_timestamps() {
    let sample = [
        "// a comment may say Instant::now()",
        concat!("    std::thread::sle", "ep(Duration::from_millis(50));"),
        concat!("    let t = std::time::Inst", "ant::now();"),
        concat!("    assert!(t.elap", "sed() < Duration::from_secs(1));"),
        "    let fine = Stopwatch::start();",
    ]
    .join("\n");
    let found = clock_offenders("sample.rs", &sample);
    assert_eq!(
        found
            .iter()
            .map(|o| o.split(':').nth(1).unwrap_or(""))
            .collect::<Vec<_>>(),
        ["2", "3", "4"],
        "{found:?}"
    );
}
