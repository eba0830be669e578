//! Replays the fuzz targets' inputs on stable Rust: every file of
//! `fuzz/corpus/<target>/` (the seeds) and `fuzz/regressions/<target>/` (each
//! input that once crashed a target) goes through the same check as the
//! cargo-fuzz target, from [`memtide_testkit::fuzz`]. See
//! `docs/reliability.md`, "Fuzzing".

#![cfg(all(feature = "fs", not(target_arch = "wasm32")))]

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use memtide_testkit::fuzz as checks;

#[test]
fn every_seed_and_regression_input_passes_its_target_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut failures = Vec::new();
    let mut replayed = 0;
    for (target, check) in checks::TARGETS {
        for folder in ["corpus", "regressions"] {
            let Ok(entries) = fs::read_dir(root.join(folder).join(target)) else {
                continue;
            };
            // Only the committed seeds of `corpus/`: what a local fuzzing run
            // adds there is not in the repository.
            let mut paths: Vec<_> = entries
                .map(|entry| entry.unwrap().path())
                .filter(|path| folder == "regressions" || is_seed(path))
                .collect();
            paths.sort();
            for path in paths {
                let data = fs::read(&path).unwrap();
                replayed += 1;
                if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
                    failures.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "inputs failing their check: {failures:#?}"
    );
    assert!(
        replayed >= checks::TARGETS.len(),
        "only {replayed} inputs found"
    );
}

#[test]
fn every_target_has_a_binary_and_seeds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for (target, _) in checks::TARGETS {
        let binary = format!("fuzz_targets/{target}.rs");
        assert!(root.join(&binary).is_file(), "{binary} is missing");
        assert!(
            manifest.contains(&format!("path = \"{binary}\"")),
            "no [[bin]] for {target}"
        );
        let seeds = fs::read_dir(root.join("corpus").join(target)).map_or(0, |entries| {
            entries
                .filter(|e| is_seed(&e.as_ref().unwrap().path()))
                .count()
        });
        assert!(seeds > 0, "fuzz/corpus/{target}/ has no seed");
    }
}

/// Seeds are the corpus files named `seed-*` (`fuzz/.gitignore` keeps only
/// those).
fn is_seed(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("seed-"))
}
