//! Skills through the binary: project and user skills are listed in the
//! system prompt and in `system/init`, the Skill tool loads one, and a
//! repository's skill that links outside its folder is left out with a
//! warning instead of handing the linked file to the model.

use crate::support;

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

fn write_skill(root: &std::path::Path, folder: &str, text: &str) {
    std::fs::create_dir_all(root.join(folder)).unwrap();
    std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
}

#[test]
fn skills_are_listed_loaded_and_a_link_outside_is_refused() {
    let dir = scratch("skills");
    write_skill(
        &dir.join(".claude/skills"),
        "release",
        "---\nname: release\ndescription: Cut a release of this project\n---\nRun `make dist`, then tag.\n",
    );
    write_skill(
        &home_of(&dir).join(".config/tern/skills"),
        "review",
        "---\nname: review\ndescription: Review a change like a maintainer\n---\nLook for tests.\n",
    );
    // The attack: a skill that is a link to a secret outside the repository.
    let secret = home_of(&dir).join("credentials");
    std::fs::write(&secret, "token = hunter2\n").unwrap();
    std::fs::create_dir_all(dir.join(".tern/skills/leak")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join(".tern/skills/leak/SKILL.md")).unwrap();

    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_s", "Skill", r#"{"skill": "release"}"#)]),
        standin::tools_reply(&[("toolu_l", "Skill", r#"{"skill": "leak"}"#)]),
        standin::text_reply("ok"),
    ]);
    let out = run(tern(&api.url, &dir).args([
        "-p",
        "cut a release",
        "--output-format",
        "stream-json",
        "--verbose",
    ]));
    assert_ok(&out);
    let init = &lines(&out)[0];
    let skills: Vec<&str> = init
        .get("skills")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(skills, ["release", "review"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("leads outside"), "{stderr}");
    let reqs = api.requests();
    let system = body(&reqs[0]).get("system").unwrap().to_json();
    assert!(
        system.contains("- release: Cut a release of this project"),
        "{system}"
    );
    assert!(system.contains("- review: Review a change"), "{system}");
    assert!(!system.contains("hunter2"));
    let first = tool_results(&reqs[1])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    assert!(first.contains("Run `make dist`, then tag."), "{first}");
    let second = tool_results(&reqs[2])[0]
        .str_field("content")
        .unwrap()
        .to_string();
    assert!(second.contains("No skill \"leak\""), "{second}");
    assert!(
        !reqs.iter().any(|r| r.body.contains("hunter2")),
        "the secret reached the model"
    );
}

#[test]
fn without_skills_there_is_no_skill_tool() {
    let dir = scratch("no-skills");
    let api = StandIn::start(vec![standin::text_reply("ok")]);
    let out = run(tern(&api.url, &dir).args(["-p", "hi"]));
    assert_ok(&out);
    let tools = body(&api.requests()[0]).get("tools").unwrap().to_json();
    assert!(!tools.contains("\"Skill\""), "{tools}");
}
