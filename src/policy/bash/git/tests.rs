//! git's table and the repository check, both ways: what a planted config
//! makes real git do, and that tern will not auto-allow git there.

use super::*;
use crate::policy::bash::analyse;
use std::process::Command;

fn git_here() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

fn repo() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-git-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    let d = std::fs::canonicalize(d).unwrap();
    let run = |args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.email=a@b", "-c", "user.name=a"])
            .args(args)
            .current_dir(&d)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    run(&["init", "-q"]);
    std::fs::write(d.join("a.txt"), "one\n").unwrap();
    run(&["add", "a.txt"]);
    run(&["commit", "-qm", "one"]);
    std::fs::write(d.join("a.txt"), "two\n").unwrap();
    d
}

fn inside_of(root: &Path) -> impl Fn(&Path) -> bool + '_ {
    move |p: &Path| p.starts_with(root)
}

#[test]
fn read_only_subcommands_and_their_limits() {
    if !git_here() {
        return;
    }
    let d = repo();
    for cmd in [
        "git status -sb",
        "git log --oneline -5 --graph --decorate",
        "git log -p -1 --stat -- a.txt",
        "git diff --cached --name-only",
        "git show HEAD:a.txt",
        "git blame -L 1,1 a.txt",
        "git branch -a --contains HEAD",
        "git branch --list 'f*'",
        "git tag -l",
        "git stash list",
        "git config --get user.name",
        "git rev-parse --show-toplevel",
        "git -C . status",
        "git grep -n one",
        "git log --author=\"$(git config user.name)\"",
        "git remote get-url origin",
        "git worktree list",
    ] {
        let a = analyse(cmd, &d);
        assert!(a.why_not().is_none(), "{cmd:?}: {:?}", a.why_not());
    }
    for (cmd, why) in [
        ("git branch new", "creates"),
        ("git tag v1", "creates"),
        ("git branch -D main", "can write"),
        ("git stash", "changes"),
        ("git reflog expire --all", "changes"),
        ("git config core.pager cat", "sets"),
        ("git -c core.pager=sh log", "changes which"),
        ("git --git-dir=/x log", "changes which"),
        ("git log --output=x", "can write"),
        ("git diff --ext-diff", "can write"),
        ("git grep -O vim x", "can write"),
        ("git log --show-signature", "can write"),
        ("git log --format=%G?", "gpg"),
        ("git cat-file --textconv HEAD:a.txt", "can write"),
        ("git push", "not a known"),
        ("git log --outp=x", "harmless"),
    ] {
        let e = analyse(cmd, &d)
            .why_not()
            .unwrap_or_else(|| panic!("{cmd:?} passed"));
        assert!(e.contains(why), "{cmd:?}: {e} (wanted {why:?})");
    }
}

/// A hook in the repository config runs on a plain `git status`; the check
/// refuses that repository.
#[test]
fn a_config_that_runs_programs_is_refused() {
    if !git_here() {
        return;
    }
    let d = repo();
    let marker = d.join("PWNED");
    std::fs::write(
        d.join(".git/config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {}; false\n",
            marker.display()
        ),
    )
    .unwrap();
    let _ = Command::new("git").arg("status").current_dir(&d).output();
    assert!(
        marker.exists(),
        "the fsmonitor hook did not run: the case proves nothing"
    );
    let e = repo_check(&d, &inside_of(&d)).unwrap_err();
    assert!(e.contains("core.fsmonitor"), "{e}");
    for text in [
        "[diff]\n\texternal = x\n",
        "[diff \"x\"]\n\ttextconv = x\n",
        "[filter \"x\"]\n\tclean = x\n",
        "[include]\n\tpath = ../x\n",
        "[includeIf \"gitdir:/\"]\n\tpath = x\n",
        "[core]\n\tworktree = /etc\n",
        "[pager]\n\tlog = x\n",
        "[core] fsmonitor = x\n",
        "[CORE]\n\tFSMonitor = x\n",
    ] {
        std::fs::write(d.join(".git/config"), text).unwrap();
        assert!(repo_check(&d, &inside_of(&d)).is_err(), "{text:?}");
    }
    std::fs::write(
        d.join(".git/config"),
        "[core]\n\tbare = false\n[user]\n\tname = a\n",
    )
    .unwrap();
    repo_check(&d, &inside_of(&d)).unwrap();
}

/// A `.git` file pointing at a directory the model could have written
/// (inside the project, not under .git) would make that directory's config
/// git's config.
#[test]
fn a_planted_gitdir_link_is_refused() {
    if !git_here() {
        return;
    }
    let d = repo();
    let fake = d.join("fake");
    std::fs::create_dir_all(fake.join("refs")).unwrap();
    std::fs::create_dir_all(fake.join("objects")).unwrap();
    std::fs::write(fake.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let marker = d.join("PWNED");
    std::fs::write(
        fake.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {}; false\n",
            marker.display()
        ),
    )
    .unwrap();
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join(".git"), "gitdir: ../fake\n").unwrap();
    std::fs::write(sub.join("x"), "x").unwrap();
    let _ = Command::new("git").arg("status").current_dir(&sub).output();
    assert!(
        marker.exists(),
        "git did not use the planted directory: the case proves nothing"
    );
    let e = repo_check(&sub, &inside_of(&d)).unwrap_err();
    assert!(e.contains("points git at"), "{e}");
    // A worktree's link into the main repository's .git is fine.
    std::fs::write(sub.join(".git"), format!("gitdir: {}/.git\n", d.display())).unwrap();
    repo_check(&sub, &inside_of(&d)).unwrap();
}

/// The hardened environment stops what the repository check is there for,
/// on its own: an fsmonitor hook and a planted bare repository's textconv.
#[test]
fn the_hardened_environment_neutralises_hooks_git_would_run() {
    if !git_here() {
        return;
    }
    let d = repo();
    let marker = d.join("PWNED");
    let mut cfg = std::fs::read_to_string(d.join(".git/config")).unwrap();
    cfg.push_str(&format!(
        "[core]\n\tfsmonitor = touch {}; false\n",
        marker.display()
    ));
    std::fs::write(d.join(".git/config"), cfg).unwrap();
    let run = |args: &[&str], dir: &Path, hardened: bool| {
        let mut c = Command::new("git");
        c.args(args).current_dir(dir);
        if hardened {
            let (set, unset) = crate::policy::bash::env::hardened(&[]);
            for k in unset {
                c.env_remove(k);
            }
            c.envs(set);
        }
        let _ = c.output();
    };
    run(&["status"], &d, true);
    assert!(
        !marker.exists(),
        "fsmonitor ran under the hardened environment"
    );
    run(&["status"], &d, false);
    assert!(
        marker.exists(),
        "fsmonitor did not run without it: the case proves nothing"
    );

    let bare = d.join("bare");
    Command::new("git")
        .args(["clone", "-q", "--bare", ".", "bare"])
        .current_dir(&d)
        .output()
        .unwrap();
    let mark2 = d.join("PWNED2");
    let mut cfg = std::fs::read_to_string(bare.join("config")).unwrap();
    cfg.push_str(&format!(
        "[diff \"x\"]\n\ttextconv = touch {}; cat\n",
        mark2.display()
    ));
    std::fs::write(bare.join("config"), cfg).unwrap();
    std::fs::create_dir_all(bare.join("info")).unwrap();
    std::fs::write(bare.join("info/attributes"), "* diff=x\n").unwrap();
    // Two commits so that log -p has a diff to convert.
    run(&["log", "-p", "-1"], &bare, true);
    assert!(
        !mark2.exists(),
        "a bare repository's textconv ran under the hardened environment"
    );
    run(&["log", "-p", "-1"], &bare, false);
    assert!(
        mark2.exists(),
        "textconv did not run without it: the case proves nothing"
    );
}
