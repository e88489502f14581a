//! The fleet examples (docs/fleet.md): the GitHub Actions workflow and the
//! Kubernetes manifests validate against their schemas with the
//! validators installed by package name (ci/fleet.sh: check-jsonschema,
//! whose GitHub workflow schema ships inside it, and kubernetes-validate,
//! strict), a broken copy of each is rejected (so the check can fail),
//! and the tern command line each example runs works as written.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::standin::{self, StandIn};
use support::*;

fn validators() -> Option<PathBuf> {
    if runner().is_some() {
        skip_emulated("fleet examples", "the validators run natively");
        return None;
    }
    let bin = std::env::var("TERN_FLEET_BIN").map_or_else(
        |_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/tern-fleet-venv/bin")
        },
        PathBuf::from,
    );
    if !bin.join("check-jsonschema").exists() || !bin.join("kubernetes-validate").exists() {
        skip(
            "fleet examples",
            &format!(
                "no check-jsonschema and kubernetes-validate in {} (run ci/fleet.sh)",
                bin.display()
            ),
        );
        return None;
    }
    Some(bin)
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// Runs a validator on `file`; its success and what it said.
fn validate(bin: &Path, file: &Path) -> (bool, String) {
    let out = if file.extension().is_some_and(|e| e == "yml") {
        Command::new(bin.join("check-jsonschema"))
            .args(["--builtin-schema", "vendor.github-workflows"])
            .arg(file)
            .output()
    } else {
        Command::new(bin.join("kubernetes-validate"))
            .arg("--strict")
            .arg(file)
            .output()
    }
    .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[test]
fn both_examples_validate_and_broken_copies_do_not() {
    let Some(bin) = validators() else { return };
    let dir = scratch("fleet-validate");
    for (name, break_it) in [
        ("github-actions.yml", ("    runs-on: ubuntu-latest\n", "")),
        (
            "kubernetes-job.yaml",
            (
                "      restartPolicy: Never\n",
                "      restartPolicy: Never\n      restartPolicyy: Never\n",
            ),
        ),
    ] {
        let file = example(name);
        let (ok, said) = validate(&bin, &file);
        assert!(ok, "{name} does not validate:\n{said}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(break_it.0), "{name} changed: update the test");
        let broken = dir.join(name);
        std::fs::write(&broken, text.replacen(break_it.0, break_it.1, 1)).unwrap();
        let (ok, said) = validate(&bin, &broken);
        assert!(!ok, "a broken {name} validated:\n{said}");
    }
    let k8s = std::fs::read_to_string(example("kubernetes-job.yaml")).unwrap();
    for kind in [
        "kind: ConfigMap",
        "kind: PersistentVolumeClaim",
        "kind: Job",
    ] {
        assert!(k8s.contains(kind), "{kind}");
    }
}

/// The flags after the prompt on the line that runs tern, up to the
/// redirection: `tern -p "…" --a --b 1 \` (lines joined).
fn flags_after(text: &str, start: &str) -> Vec<String> {
    let at = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let rest = &text[at..];
    let end = rest.find('>').unwrap();
    rest[..end]
        .replace("\\\n", " ")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_tern_line_of_each_example_runs_as_written() {
    if runner().is_some() {
        return skip_emulated("fleet command lines", "checked natively");
    }
    let gh = std::fs::read_to_string(example("github-actions.yml")).unwrap();
    let k8s = std::fs::read_to_string(example("kubernetes-job.yaml")).unwrap();
    for (name, flags) in [
        ("github-actions.yml", flags_after(&gh, "tern -p \"$TASK\"")),
        (
            "kubernetes-job.yaml",
            flags_after(&k8s, "exec tern -p \"$(cat /tasks/$JOB_COMPLETION_INDEX)\""),
        ),
    ] {
        assert!(
            flags.contains(&"--trust-project".to_string()),
            "{name}: {flags:?}"
        );
        let dir = scratch("fleet-line");
        let api = StandIn::start(vec![standin::text_reply("Done.")]);
        let out = run(tern(&api.url, &dir)
            .args(["-p", "do the task"])
            .args(&flags));
        assert_ok(&out);
        let result = last_result(&out);
        assert_eq!(
            result.str_field("subtype"),
            Some("success"),
            "{name}: {flags:?}"
        );
        assert_eq!(result.str_field("result"), Some("Done."), "{name}");
    }
}
