//! Skills: folders holding a `SKILL.md` (frontmatter `name` and
//! `description`, then instructions) and whatever files the instructions
//! use. Project skills live in `.tern/skills/` and `.claude/skills/`, the
//! user's in `~/.config/tern/skills/` and `~/.claude/skills/`; on a name
//! found twice the earlier folder wins. The system prompt lists them in a
//! line each; the Skill tool loads one when the model wants it.
//!
//! A repository is untrusted: a `SKILL.md` that is a link to a file
//! outside its skills folder (`~/.aws/credentials`, say) would hand that
//! file to the model, so such a skill is left out and said to be; so is
//! anything that is not a regular file, or is too big.

use std::path::{Path, PathBuf};

/// Skills listed in the system prompt at most.
const MAX_LISTED: usize = 100;

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
    /// "project", "user" or "plugin".
    pub source: &'static str,
}

/// Where skills are looked for, in order of precedence.
pub fn dirs(cwd: &Path, home: Option<&Path>) -> Vec<(PathBuf, &'static str)> {
    let mut out = vec![
        (cwd.join(".tern/skills"), "project"),
        (cwd.join(".claude/skills"), "project"),
    ];
    if let Some(h) = home {
        out.push((h.join(".config/tern/skills"), "user"));
        out.push((h.join(".claude/skills"), "user"));
    }
    out
}

/// The skills in `dirs`, and why any were left out.
pub fn discover(dirs: &[(PathBuf, &'static str)]) -> (Vec<Skill>, Vec<String>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut warnings = Vec::new();
    for (root, source) in dirs {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        folders.sort();
        for dir in folders {
            if !dir.join("SKILL.md").exists() && !dir.join("SKILL.md").is_symlink() {
                continue;
            }
            match read(root, &dir) {
                Ok(text) => {
                    let (name, description, _) = frontmatter(&text);
                    let name = name.unwrap_or_else(|| {
                        dir.file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default()
                    });
                    if !valid_name(&name) {
                        warnings.push(format!(
                            "skill in {} left out: its name {name:?} is not 1-64 letters, digits, '-', '_' or ':'",
                            dir.display()
                        ));
                        continue;
                    }
                    if skills.iter().any(|s| s.name == name) {
                        continue;
                    }
                    skills.push(Skill {
                        name,
                        description: description.unwrap_or_default(),
                        dir,
                        source,
                    });
                }
                Err(why) => warnings.push(format!("skill in {} left out: {why}", dir.display())),
            }
        }
    }
    (skills, warnings)
}

/// A plugin's skills, named `plugin:name`.
pub fn discover_plugin(plugin: &str, dirs: &[PathBuf]) -> (Vec<Skill>, Vec<String>) {
    let roots: Vec<(PathBuf, &'static str)> = dirs.iter().map(|d| (d.clone(), "plugin")).collect();
    let (mut skills, warnings) = discover(&roots);
    for s in &mut skills {
        s.name = format!("{plugin}:{}", s.name);
    }
    (skills, warnings)
}

/// The skill's instructions (the text after the frontmatter), checked
/// again as it is read now.
pub fn body(skill: &Skill) -> Result<String, String> {
    let root = skill.dir.parent().unwrap_or(&skill.dir);
    let text = read(root, &skill.dir)?;
    Ok(frontmatter(&text).2.to_string())
}

/// `SKILL.md` of `dir`, if it is a regular file of sensible size whose
/// real path lies inside `root` (the skills folder it was found in).
fn read(root: &Path, dir: &Path) -> Result<String, String> {
    super::documents::read_inside(root, &dir.join("SKILL.md"))
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
}

/// `name`, `description` and the body of a `---` frontmatter document.
/// A `description: >` or `|` continues on the indented lines after it.
fn frontmatter(text: &str) -> (Option<String>, Option<String>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---") else {
        return (None, None, text.trim());
    };
    let Some(end) = rest.find("\n---") else {
        return (None, None, text.trim());
    };
    let head = &rest[..end];
    let body = rest[end + 4..]
        .split_once('\n')
        .map_or("", |(_, b)| b)
        .trim();
    let unquote = |v: &str| v.trim().trim_matches(['"', '\'']).to_string();
    let (mut name, mut description) = (None, None);
    let mut lines = head.lines().peekable();
    while let Some(line) = lines.next() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if matches!(value, ">" | "|" | ">-" | "|-") {
            let mut joined = Vec::new();
            while let Some(next) = lines.peek() {
                if !next.starts_with([' ', '\t']) {
                    break;
                }
                joined.push(next.trim());
                lines.next();
            }
            joined.join(" ")
        } else {
            unquote(value)
        };
        match key.trim() {
            "name" => name = Some(value).filter(|v| !v.is_empty()),
            "description" => description = Some(value).filter(|v| !v.is_empty()),
            _ => {}
        }
    }
    (name, description, body)
}

/// The system prompt's list of skills (None when there are none).
pub fn listing(skills: &[Skill], compact: bool) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let cut = if compact { 80 } else { 300 };
    let mut out = String::from(
        "Skills: instructions for particular tasks, loaded with the Skill tool when a task \
         matches one.\n",
    );
    for s in skills.iter().take(MAX_LISTED) {
        let mut d: String = s.description.chars().take(cut).collect();
        if s.description.chars().count() > cut {
            d.push('…');
        }
        out.push_str(&format!("- {}: {d}\n", s.name));
    }
    if skills.len() > MAX_LISTED {
        out.push_str(&format!("(and {} more)\n", skills.len() - MAX_LISTED));
    }
    Some(out.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tern-skills-{name}-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn skill(root: &Path, folder: &str, text: &str) {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn frontmatter_names_and_describes_and_earlier_folders_win() {
        let (a, b) = (dir("a"), dir("b"));
        skill(
            &a,
            "pdf",
            "---\nname: pdf-tools\ndescription: \"Fill PDF forms\"\n---\nUse pdftk.\n",
        );
        skill(
            &a,
            "release",
            "---\ndescription: >\n  Cut a release:\n  tag and publish\n---\nSteps.\n",
        );
        skill(
            &b,
            "other",
            "---\nname: pdf-tools\ndescription: loses\n---\nx\n",
        );
        skill(&b, "bad", "---\nname: has spaces\n---\nx\n");
        let (found, warnings) = discover(&[(a.clone(), "project"), (b.clone(), "user")]);
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pdf-tools", "release"]);
        assert_eq!(found[0].description, "Fill PDF forms");
        assert_eq!(found[1].description, "Cut a release: tag and publish");
        assert_eq!(body(&found[0]).unwrap(), "Use pdftk.");
        assert!(
            warnings.iter().any(|w| w.contains("has spaces")),
            "{warnings:?}"
        );
        let text = listing(&found, false).unwrap();
        assert!(text.contains("- pdf-tools: Fill PDF forms"), "{text}");
    }

    /// The attack: a repository's SKILL.md is a link to a secret outside
    /// it. Read plainly, the link hands over the secret; tern leaves the
    /// skill out.
    #[test]
    fn a_skill_file_linked_outside_its_folder_is_left_out() {
        let (root, outside) = (dir("root"), dir("outside"));
        let secret = outside.join("credentials");
        std::fs::write(&secret, "aws_secret_access_key = hunter2\n").unwrap();
        std::fs::create_dir_all(root.join("leak")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join("leak/SKILL.md")).unwrap();
        assert!(
            std::fs::read_to_string(root.join("leak/SKILL.md"))
                .unwrap()
                .contains("hunter2"),
            "the link works"
        );
        let (found, warnings) = discover(&[(root.clone(), "project")]);
        assert!(found.is_empty(), "{found:?}");
        assert!(warnings[0].contains("leads outside"), "{warnings:?}");
        // A link inside the folder is fine.
        std::fs::write(root.join("shared.md"), "---\nname: ok\n---\nbody\n").unwrap();
        std::fs::create_dir_all(root.join("ok")).unwrap();
        std::os::unix::fs::symlink(root.join("shared.md"), root.join("ok/SKILL.md")).unwrap();
        let (found, _) = discover(&[(root, "project")]);
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn a_fifo_or_a_huge_file_is_left_out() {
        let root = dir("fifo");
        std::fs::create_dir_all(root.join("pipe")).unwrap();
        let path = std::ffi::CString::new(root.join("pipe/SKILL.md").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        skill(&root, "huge", &"x".repeat(300 * 1024));
        let (found, warnings) = discover(&[(root, "project")]);
        assert!(found.is_empty());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }
}
