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

// ---- fitness of the architecture (issue 31) ----------------------------------

/// The module path of a source file: `src/edge/reactor/calls.rs` and
/// `src/edge/reactor/calls/mod.rs` are `edge::reactor::calls`.
fn module_of(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(root().join("src")).unwrap_or(path);
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// Every path this text names from `crate::` or `super::` (in `use` lines,
/// groups expanded, and inline), as segments relative to `module`.
fn named_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &str, rest: &str, out: &mut Vec<String>) {
        // `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
        let Some(open) = rest.find('{') else {
            out.push(format!("{prefix}{rest}"));
            return;
        };
        let head = &rest[..open];
        let mut depth = 0;
        let mut start = open + 1;
        for (i, c) in rest.char_indices().skip(open) {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    let item = rest[start..i].trim();
                    if !item.is_empty() {
                        expand(&format!("{prefix}{head}"), item, out);
                    }
                    start = i + 1;
                    if c == '}' {
                        return;
                    }
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
    }
    let mut flat = Vec::new();
    let text: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    for statement in text.split(';') {
        let statement = statement.trim();
        let body = statement
            .strip_prefix("pub(crate) use ")
            .or_else(|| statement.strip_prefix("pub(super) use "))
            .or_else(|| statement.strip_prefix("pub use "))
            .or_else(|| statement.strip_prefix("use "));
        if let Some(body) = body {
            let body: String = body.split_whitespace().collect();
            expand("", &body, &mut flat);
        }
    }
    // Inline paths such as `super::bigresults::ResultStore::new`.
    for (at, _) in text.match_indices("::") {
        let start = text[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |i| i + 1);
        let end = text[at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(text.len(), |i| at + i);
        let path = &text[start..end];
        if path.starts_with("crate::") || path.starts_with("super::") {
            flat.push(path.to_string());
        }
    }
    let mut out = Vec::new();
    for path in flat {
        let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut resolved: Vec<String> = Vec::new();
        match segments.first() {
            Some(&"crate") => {}
            Some(&"super") => resolved = module.to_vec(),
            Some(&"self") => resolved = module.to_vec(),
            _ => continue,
        }
        for s in &segments {
            match *s {
                "crate" | "self" => {}
                "super" => {
                    resolved.pop();
                }
                other => resolved.push(other.to_string()),
            }
        }
        out.push(resolved);
    }
    out
}

#[test]
fn no_import_circles_between_source_files() {
    let files = rust_files("src");
    let modules: Vec<Vec<String>> = files.iter().map(|p| module_of(p)).collect();
    // Each file's edges to the files whose items it names (the longest
    // module prefix of each path); a file and its own submodules are one
    // unit (a parent declares its children, they use its items).
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    for (i, path) in files.iter().enumerate() {
        for named in named_paths(&modules[i], &read(path)) {
            let target = (1..=named.len())
                .rev()
                .find_map(|n| modules.iter().position(|m| m[..] == named[..n]));
            let Some(j) = target else { continue };
            let (a, b) = (&modules[i], &modules[j]);
            if j != i && !a.starts_with(b) && !b.starts_with(a) && !edges[i].contains(&j) {
                edges[i].push(j);
            }
        }
    }
    // Strongly connected components (Tarjan), listing those of two or more.
    struct Walk<'a> {
        edges: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        circles: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for k in 0..w.edges[v].len() {
            let u = w.edges[v][k];
            match w.index[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(iu) if w.on_stack[u] => w.low[v] = w.low[v].min(iu),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut component = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack[u] = false;
                component.push(u);
                if u == v {
                    break;
                }
            }
            if component.len() > 1 {
                w.circles.push(component);
            }
        }
    }
    let n = files.len();
    let mut walk = Walk {
        edges: &edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        circles: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            visit(&mut walk, v);
        }
    }
    let offenders = walk
        .circles
        .iter()
        .map(|c| {
            let names: Vec<String> = c.iter().map(|&i| rel(&files[i])).collect();
            names.join(" <-> ")
        })
        .collect();
    check(
        "source files must not import each other in a circle (put what both need in a leaf)",
        offenders,
    );
}

/// Structs of `src/edge` above the field budget today, with why: each
/// entry is work to do, and the test fails once one fits, so the list only
/// shrinks.
const WIDE_STRUCTS: &[(&str, &str)] = &[];

/// The most fields a struct of `src/edge` may have.
const MAX_EDGE_FIELDS: usize = 15;

#[test]
fn edge_structs_have_at_most_fifteen_fields() {
    let mut offenders = Vec::new();
    let mut wide_seen = Vec::new();
    for path in rust_files("src/edge") {
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let decl = trimmed
                .split_once("struct ")
                .filter(|(before, _)| before.is_empty() || before.starts_with("pub"))
                .map(|(_, after)| after);
            let Some(decl) = decl.filter(|d| d.trim_end().ends_with('{')) else {
                continue;
            };
            let name: String = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let mut depth = 1;
            let mut fields = 0;
            for line in &lines[n + 1..] {
                let field = line.trim_start();
                let field = field
                    .strip_prefix("pub")
                    .map_or(field, |f| f.split_once(' ').map_or(f, |(_, r)| r));
                let is_field = field.split_once(':').is_some_and(|(name, _)| {
                    !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                });
                if depth == 1 && is_field {
                    fields += 1;
                }
                depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
                if depth <= 0 {
                    break;
                }
            }
            let known = WIDE_STRUCTS.iter().any(|(wide, _)| *wide == name);
            if known {
                wide_seen.push((name.clone(), fields));
            }
            if fields > MAX_EDGE_FIELDS && !known {
                offenders.push(format!(
                    "{}:{}: {name} has {fields} fields",
                    rel(&path),
                    n + 1
                ));
            }
        }
    }
    for (wide, _) in WIDE_STRUCTS {
        let fits = wide_seen
            .iter()
            .filter(|(name, _)| name == wide)
            .all(|(_, fields)| *fields <= MAX_EDGE_FIELDS);
        if fits {
            offenders.push(format!("{wide} fits now: take it off WIDE_STRUCTS"));
        }
    }
    check(
        "a struct of src/edge has at most 15 fields (split it by owner)",
        offenders,
    );
}

/// Files that call `libc` functions directly, and how many calls: those
/// `syscall!` does not fit (a pointer or a result that cannot fail, code
/// between `fork` and `exec` or in a signal handler, the allocator, start-up
/// before anything can report, tests). The counts only shrink.
const RAW_LIBC: &[(&str, usize)] = &[
    ("src/edge/proc.rs", 9),
    ("src/edge/proc/tests.rs", 2),
    ("src/edge/rundir.rs", 1),
    ("src/edge/shm.rs", 3),
    ("src/main.rs", 4),
    ("src/musl/alloc.rs", 5),
];

#[test]
fn libc_functions_are_called_through_the_syscall_helper() {
    let mut offenders = Vec::new();
    for path in rust_files("src") {
        let name = rel(&path);
        let mut calls = 0;
        for line in read(&path).lines() {
            if line.contains(concat!("sys", "call!")) {
                continue;
            }
            for (at, _) in line.match_indices(concat!("libc", "::")) {
                let rest = &line[at + 6..];
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let lower = ident.chars().next().is_some_and(|c| c.is_ascii_lowercase());
                if lower && rest[ident.len()..].starts_with('(') {
                    calls += 1;
                }
            }
        }
        let allowed = RAW_LIBC
            .iter()
            .find(|(file, _)| *file == name)
            .map_or(0, |(_, n)| *n);
        if calls > allowed {
            offenders.push(format!(
                "{name}: {calls} direct libc calls (allowed {allowed})"
            ));
        } else if calls < allowed {
            offenders.push(format!(
                "{name}: {calls} direct libc calls now: lower RAW_LIBC to {calls}"
            ));
        }
    }
    check(
        "call libc functions through syscall! (it checks the result and keeps errno)",
        offenders,
    );
}

#[test]
fn the_pure_layers_forbid_unsafe_code() {
    let offenders = ["src/format.rs", "src/protocol.rs"]
        .iter()
        .filter(|file| !read(&root().join(file)).contains("#![forbid(unsafe_code)]"))
        .map(|file| file.to_string())
        .collect();
    check("format and protocol need no unsafe code", offenders);
}

/// ARCHITECTURE.md stays short enough to read in ten minutes.
const ARCHITECTURE_WORDS: usize = 1500;

#[test]
fn the_architecture_stays_within_its_word_budget() {
    let words = read(&root().join("ARCHITECTURE.md"))
        .split_whitespace()
        .count();
    assert!(
        words <= ARCHITECTURE_WORDS,
        "ARCHITECTURE.md has {words} words; its budget is {ARCHITECTURE_WORDS}"
    );
}

/// The most methods `impl Reactor` blocks may have across `src`.
/// The loop keeps the event dispatch, the one apply of a step and the glue
/// of what owners return; behaviour goes onto the owners. The bound only
/// shrinks: lower it whenever the count drops.
const REACTOR_METHODS: usize = 36;

#[test]
fn the_reactor_keeps_few_methods() {
    let mut count = 0;
    let mut per_file = Vec::new();
    for path in rust_files("src") {
        let mut inside = false;
        let mut here = 0;
        for line in read(&path).lines() {
            if line.starts_with(concat!("impl ", "Reactor {")) {
                inside = true;
            } else if inside && line.starts_with('}') {
                inside = false;
            } else if inside {
                let item = line.strip_prefix("    ").unwrap_or("");
                let item = match item.strip_prefix("pub") {
                    Some(rest) if rest.starts_with('(') => {
                        rest.split_once(") ").map_or("", |(_, r)| r)
                    }
                    Some(rest) => rest.trim_start(),
                    None => item,
                };
                if item.starts_with("fn ") {
                    here += 1;
                }
            }
        }
        if here > 0 {
            per_file.push(format!("{}: {here}", rel(&path)));
            count += here;
        }
    }
    assert!(
        count <= REACTOR_METHODS,
        "impl Reactor has {count} methods, over the bound {REACTOR_METHODS}: put the \
         behaviour on its owner\n  {}",
        per_file.join("\n  ")
    );
    assert!(
        count == REACTOR_METHODS,
        "impl Reactor has {count} methods: lower REACTOR_METHODS to {count}"
    );
}

/// The reactor's owners: each keeps its fields private and offers a few
/// operations.
const OWNERS: &[&str] = &[
    "PoolSet",
    "Runtime",
    "Pool",
    "TaskStore",
    "Watches",
    "Calls",
    "Call",
    "Preparing",
    "HttpFront",
    "Conns",
    "Conn",
    "OAuthFront",
    "Life",
    "Stdio",
];

#[test]
fn owners_keep_their_fields_private() {
    let mut offenders = Vec::new();
    let mut seen = Vec::new();
    for path in rust_files("src/edge") {
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let Some((_, decl)) = line.split_once("struct ") else {
                continue;
            };
            let name: String = decl
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !decl.trim_end().ends_with('{') || !OWNERS.contains(&name.as_str()) {
                continue;
            }
            let open: Vec<&str> = lines[n + 1..]
                .iter()
                .take_while(|l| !l.starts_with('}'))
                .map(|l| l.trim_start())
                .filter(|l| l.starts_with("pub") && !l.contains(" fn "))
                .collect();
            if !open.is_empty() {
                offenders.push(format!(
                    "{}:{}: {name} shows {}",
                    rel(&path),
                    n + 1,
                    open.join(", ")
                ));
            }
            seen.push(name);
        }
    }
    for owner in OWNERS {
        if !seen.iter().any(|s| s == owner) {
            offenders.push(format!("owner {owner} not found"));
        }
    }
    check(
        "an owner's fields are private: give it methods instead",
        offenders,
    );
}

/// The one file outside the protocol layer that carries out a protocol step.
const STEP_APPLIER: &str = "src/edge/reactor.rs";

#[test]
fn steps_are_applied_in_one_place() {
    // The protocol layer makes and refines steps; the edge carries them out
    // in one function, so a new step is one match arm, not one per transport.
    let offenders = rust_files("src")
        .into_iter()
        .filter(|path| rel(path) != STEP_APPLIER && !rel(path).starts_with("src/protocol"))
        .filter(|path| read(path).contains("Step::"))
        .map(|path| rel(&path))
        .collect();
    check(
        &format!("`Step::` is matched only in {STEP_APPLIER}"),
        offenders,
    );
}

/// The loop's two questions to the owners each turn: when is the next
/// deadline, and act on what is due.
const PER_TURN: &[&str] = &["fn next_deadline(&mut self)", "fn run_timers(&mut self)"];

#[test]
fn the_loop_asks_owners_for_deadlines_without_scanning() {
    // Each owner keeps its deadlines keyed (`reactor::timers`) and answers
    // for its own; the loop only asks, so a turn costs what is due, not
    // what is served. The owners' side (the pools and the watches act on
    // armed deadlines only, never on a scan) is proven by the unit tests
    // `a_turn_acts_only_on_armed_deadlines_never_on_a_scan` and
    // `a_turn_looks_at_the_watches_only_when_their_look_is_due`.
    let text = read(&root().join("src/edge/reactor.rs"));
    let lines: Vec<&str> = text.lines().collect();
    let mut offenders = Vec::new();
    for signature in PER_TURN {
        let Some(start) = lines
            .iter()
            .position(|l| l.trim_start().starts_with(signature))
        else {
            offenders.push(format!("`{signature}` not found in src/edge/reactor.rs"));
            continue;
        };
        let body = lines[start + 1..].iter().take_while(|l| **l != "    }");
        for line in body {
            let code = line.split("//").next().unwrap_or("");
            let looping = [
                "for ", "while ", "loop {", ".iter(", ".procs(", "0..", ".len()",
            ]
            .iter()
            .find(|w| code.contains(*w));
            if let Some(word) = looping {
                offenders.push(format!("{signature}: `{}` ({word})", line.trim()));
            }
        }
    }
    check(
        "the loop asks each owner for its next deadline and what is due: no loop over \
         pools, programs, watches or connections in it",
        offenders,
    );
}

// ---- descriptors are close-on-exec -------------------------------------------

/// What a libc call that makes a descriptor needs among its arguments to be
/// close-on-exec.
enum Cloexec {
    /// Never: the call has a close-on-exec variant (named) to use instead.
    Never(&'static str),
    /// This flag, among its arguments.
    Flag(&'static str),
}

/// The libc calls that make a descriptor. One made without close-on-exec
/// leaks into every child any thread starts meanwhile (the tests' threads
/// start servers, pools and shells all the time): a leaked write end keeps
/// its reader from ever seeing the end of the stream, a leaked socket keeps
/// a peer connected. `fcntl` (`F_DUPFD`) and `dup2` are judged apart.
const FD_MAKERS: &[(&str, Cloexec)] = &[
    ("pipe", Cloexec::Never("pipe2 with O_CLOEXEC")),
    ("dup", Cloexec::Never("fcntl with F_DUPFD_CLOEXEC")),
    ("accept", Cloexec::Never("accept4 with SOCK_CLOEXEC")),
    (
        "epoll_create",
        Cloexec::Never("epoll_create1 with EPOLL_CLOEXEC"),
    ),
    (
        "inotify_init",
        Cloexec::Never("inotify_init1 with IN_CLOEXEC"),
    ),
    ("creat", Cloexec::Never("open with O_CLOEXEC")),
    ("mkstemp", Cloexec::Never("mkostemp with O_CLOEXEC")),
    ("pipe2", Cloexec::Flag("O_CLOEXEC")),
    ("dup3", Cloexec::Flag("O_CLOEXEC")),
    ("socket", Cloexec::Flag("SOCK_CLOEXEC")),
    ("socketpair", Cloexec::Flag("SOCK_CLOEXEC")),
    ("accept4", Cloexec::Flag("SOCK_CLOEXEC")),
    ("open", Cloexec::Flag("O_CLOEXEC")),
    ("openat", Cloexec::Flag("O_CLOEXEC")),
    ("mkostemp", Cloexec::Flag("O_CLOEXEC")),
    ("epoll_create1", Cloexec::Flag("EPOLL_CLOEXEC")),
    ("eventfd", Cloexec::Flag("EFD_CLOEXEC")),
    ("memfd_create", Cloexec::Flag("MFD_CLOEXEC")),
    ("signalfd", Cloexec::Flag("SFD_CLOEXEC")),
    ("timerfd_create", Cloexec::Flag("TFD_CLOEXEC")),
    ("inotify_init1", Cloexec::Flag("IN_CLOEXEC")),
];

/// Descriptors made inheritable on purpose: (file, call, why).
const INHERITABLE: &[(&str, &str, &str)] = &[(
    "src/main.rs",
    "open",
    "fills a closed standard descriptor (0-2) at start-up, inherited like any standard one",
)];

/// The calls of `text` (from file `name`) that make a descriptor without
/// close-on-exec: `libc::<call>(...)` and `syscall!(<call>(...))`, their
/// arguments read to the closing parenthesis (over lines). Comment lines
/// are skipped.
fn inheritable_offenders(name: &str, text: &str) -> Vec<String> {
    let code: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect();
    let code = code.join("\n");
    let mut offenders = Vec::new();
    for prefix in [concat!("libc", "::"), concat!("sys", "call!(")] {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let call: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let Some(after) = rest[call.len()..].strip_prefix('(') else {
                continue;
            };
            let mut depth = 1;
            let end = after
                .char_indices()
                .find_map(|(i, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    (depth == 0).then_some(i)
                })
                .unwrap_or(after.len());
            let args = &after[..end];
            let line = code[..at].lines().count().max(1);
            let wrong = match (call.as_str(), FD_MAKERS.iter().find(|(c, _)| *c == call)) {
                ("fcntl", _) => (args.contains("F_DUPFD") && !args.contains("F_DUPFD_CLOEXEC"))
                    .then(|| "F_DUPFD without CLOEXEC: use F_DUPFD_CLOEXEC".to_string()),
                // dup2 clears close-on-exec on its target: only onto a
                // standard descriptor, which a child is meant to inherit.
                ("dup2", _) => (!args.contains("_FILENO"))
                    .then(|| "dup2 onto a descriptor other than 0-2 (not close-on-exec)".into()),
                (_, Some((_, Cloexec::Never(instead)))) => Some(format!("use {instead}")),
                (_, Some((_, Cloexec::Flag(flag)))) => {
                    (!args.contains(flag)).then(|| format!("without {flag}"))
                }
                _ => None,
            };
            let allowed = INHERITABLE
                .iter()
                .any(|(file, c, _)| *file == name && *c == call);
            if let Some(wrong) = wrong.filter(|_| !allowed) {
                offenders.push((line, format!("{name}:{line}: {call}: {wrong}")));
            }
        }
    }
    offenders.sort();
    offenders.into_iter().map(|(_, o)| o).collect()
}

#[test]
fn descriptors_are_made_close_on_exec() {
    let mut offenders = Vec::new();
    for dir in ["src", "tests", "fuzz", "bench", "examples"] {
        for path in rust_files(dir) {
            let name = rel(&path);
            offenders.extend(inheritable_offenders(&name, &read(&path)));
        }
    }
    check(
        "descriptors are made close-on-exec (the flag among the call's own arguments), or \
         listed in INHERITABLE with the reason",
        offenders,
    );
}

#[test]
fn the_close_on_exec_rule_catches_inheritable_descriptors() {
    let sample = [
        concat!("    // a comment may say libc::pi", "pe(fds)"),
        concat!("    let rc = unsafe { libc::pi", "pe(fds.as_mut_ptr()) };"),
        concat!(
            "    sys",
            "call!(pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK))?;"
        ),
        concat!(
            "    sys",
            "call!(pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK))?;"
        ),
        concat!(
            "    let fd = libc::soc",
            "ket(libc::AF_INET, libc::SOCK_STREAM, 0);"
        ),
        concat!("    let fd = libc::soc", "ket("),
        "        libc::AF_UNIX,",
        "        libc::SOCK_STREAM | libc::SOCK_CLOEXEC,",
        "        0,",
        "    );",
        concat!("    sys", "call!(fcntl(fd, libc::F_DUPFD, 3))?;"),
        concat!("    sys", "call!(fcntl(fd, libc::F_DUPFD_CLOEXEC, 3))?;"),
        concat!("    sys", "call!(dup2(fd, 7))?;"),
        concat!("    sys", "call!(dup2(fd, libc::STDOUT_FILENO))?;"),
        concat!("    let fd = libc::du", "p(0);"),
        "    let file = std::fs::File::open(path)?;",
    ]
    .join("\n");
    let found = inheritable_offenders("sample.rs", &sample);
    assert_eq!(
        found
            .iter()
            .map(|o| o.split(':').nth(1).unwrap_or(""))
            .collect::<Vec<_>>(),
        ["2", "3", "5", "11", "13", "15"],
        "{found:?}"
    );
}
