//! `make test`'s driver, `tests/run_all.sh`, with a stand-in `make`: every
//! stage runs even after one fails, the summary table says which passed,
//! failed or were skipped and why, and the exit status is non-zero when one
//! failed.

use std::process::Command;

use crate::util::{self, TempDir};

#[test]
fn every_stage_runs_and_the_summary_tells_why() {
    let dir = TempDir::new();
    // A copy of the driver, so that its logs go into the temporary tree.
    let driver =
        util::read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run_all.sh"));
    dir.write("tests/run_all.sh", driver);
    let ran = dir.join("ran");
    let make = dir.write_executable(
        "fake-make",
        format!(
            "#!/bin/sh\necho \"$2\" >> '{}'\ncase $2 in\n\
             test-rust) echo 'test result: ok. 10 passed; 0 failed;'; echo 'test result: FAILED. 4 passed; 1 failed;'; exit 101;;\n\
             test-real) echo 'test-real: skipped: no usable Morloc installation at /nowhere (no such directory)';;\n\
             static) echo 'static: skipped (the static binary is not built or tested): no musl found; to enable it, install musl-tools';;\n\
             test-scale) echo 'test-scale: nginx SKIPPED: not installed (apt-get install nginx)';;\n\
             esac\n",
            ran.display()
        ),
    );
    let out = util::output(
        Command::new("sh")
            .arg(dir.join("tests/run_all.sh"))
            .env("MAKE", &make),
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    // Every stage ran, in order, the failure notwithstanding (e2e-static is
    // not a make target here: it has no static binary and says so).
    assert_eq!(
        util::read(&ran),
        "test-pool\ntest-rust\ntest-real\nstatic\ne2e\ntest-scale\n"
    );
    let summary: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| *l != "=== make test: summary")
        .collect();
    let row = |stage: &str| -> String {
        let line = summary
            .iter()
            .find(|l| l.split_whitespace().next() == Some(stage))
            .unwrap_or_else(|| panic!("no row for {stage}: {summary:?}"));
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    assert!(
        row("test-pool").starts_with("test-pool passed"),
        "{summary:?}"
    );
    let rust = row("test-rust");
    assert!(
        rust.starts_with("test-rust FAILED")
            && rust.contains("14 tests passed, 1 failed; exit status 101"),
        "{rust}"
    );
    assert!(
        row("test-real").starts_with("test-real skipped")
            && row("test-real")
                .ends_with("no usable Morloc installation at /nowhere (no such directory)"),
        "{summary:?}"
    );
    assert!(
        row("static").ends_with("no musl found; to enable it, install musl-tools"),
        "{summary:?}"
    );
    assert!(
        row("e2e-static").ends_with("no static binary (the static stage did not build one)"),
        "{summary:?}"
    );
    let scale = row("test-scale");
    assert!(
        scale.starts_with("test-scale passed") && scale.contains("nginx SKIPPED"),
        "{scale}"
    );
    assert_eq!(
        summary.last().copied(),
        Some("make test: FAILED (see the stages marked FAILED and their logs)")
    );
}

/// When the static stage passed and left a static binary, the e2e stage runs
/// the representative subset (`E2E_SUBSET=1`) against the release binary and
/// e2e-static every job against the static one; without a static binary, e2e
/// runs every job. The summary has a CPU-time column and a total line.
#[test]
fn e2e_runs_the_subset_only_when_e2e_static_runs_everything() {
    for static_builds in [true, false] {
        let dir = TempDir::new();
        let driver =
            util::read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run_all.sh"));
        dir.write("tests/run_all.sh", driver);
        let ran = dir.join("ran");
        dir.write_executable(
            "e2e/run.sh",
            format!(
                "#!/bin/sh\necho \"e2e/run.sh $(basename \"$E2E_BIN\") subset=${{E2E_SUBSET:-}}\" >> '{}'\n",
                ran.display()
            ),
        );
        let static_stage = if static_builds {
            "mkdir -p target/static && printf '' > target/static/morloc-mcp && chmod +x target/static/morloc-mcp"
        } else {
            "echo 'static: skipped (the static binary is not built or tested): no musl found; to enable it, install musl-tools'"
        };
        let make = dir.write_executable(
            "fake-make",
            format!(
                "#!/bin/sh\ncase $2 in\n\
                 static) {static_stage};;\n\
                 e2e) echo \"e2e subset=${{E2E_SUBSET:-}}\" >> '{}';;\n\
                 esac\n",
                ran.display()
            ),
        );
        let out = util::output(
            Command::new("sh")
                .arg(dir.join("tests/run_all.sh"))
                .arg("static")
                .arg("e2e")
                .arg("e2e-static")
                .env("MAKE", &make)
                .env_remove("E2E_SUBSET"),
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        let expected = if static_builds {
            "e2e subset=1\ne2e/run.sh morloc-mcp subset=\n"
        } else {
            "e2e subset=\n"
        };
        assert_eq!(util::read(&ran), expected, "{out:?}");
        let summary: Vec<&str> = out
            .stdout
            .lines()
            .skip_while(|l| *l != "=== make test: summary")
            .collect();
        assert_eq!(
            summary[1].split_whitespace().collect::<Vec<_>>()[..4],
            ["stage", "result", "time", "cpu"],
            "{summary:?}"
        );
        assert!(
            summary
                .iter()
                .any(|l| l.starts_with("make test: ") && l.contains(" of CPU time")),
            "{summary:?}"
        );
    }
}

/// `make install-files` puts the binary, README, LICENSE and docs/ under
/// `DESTDIR/PREFIX`, the installed binary runs, and `make uninstall` takes
/// them away again, with the directories it made; an empty directory that
/// was there before (`PREFIX/bin` in the second round, as `/usr/local/bin`
/// often is) stays.
#[test]
fn install_and_uninstall_under_a_prefix() {
    let dir = TempDir::new();
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::create_dir_all(dir.join("stage/opt/had-bin/bin")).unwrap();
    for (prefix, had_bin) in [("/opt/mm", false), ("/opt/had-bin", true)] {
        let make = |target: &str| {
            util::output(
                Command::new("make")
                    .arg("-s")
                    .arg("-C")
                    .arg(root)
                    .arg(target)
                    .arg(format!("BIN={}", util::bin().display()))
                    .arg(format!("PREFIX={prefix}"))
                    .arg(format!("DESTDIR={}", dir.join("stage").display())),
            )
        };
        let installed = make("install-files");
        assert_eq!(installed.code, Some(0), "{installed:?}");
        let prefix = dir.join("stage").join(&prefix[1..]);
        let bin = prefix.join("bin/morloc-mcp");
        let version = util::output(Command::new(&bin).arg("--version"));
        assert_eq!(version.code, Some(0), "{version:?}");
        assert!(version.stdout.starts_with("morloc-mcp "), "{version:?}");
        let doc = prefix.join("share/doc/morloc-mcp");
        assert!(util::read(&doc.join("LICENSE")).starts_with("MIT License"));
        assert!(util::read(&doc.join("README.md")).starts_with("# morloc-mcp"));
        // The README's links into docs/ hold where it is installed too.
        assert!(util::read(&doc.join("docs/usage.md")).starts_with("# Usage"));

        let removed = make("uninstall");
        assert_eq!(removed.code, Some(0), "{removed:?}");
        assert!(!bin.exists());
        // The directories install made are gone once empty; PREFIX itself
        // stays, and so does a directory that was there before.
        assert!(!prefix.join("share").exists(), "{}", prefix.display());
        assert_eq!(prefix.join("bin").is_dir(), had_bin, "{}", prefix.display());
        assert!(prefix.exists());
    }
}
