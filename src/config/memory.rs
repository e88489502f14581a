//! Memory files: standing instructions the user keeps beside their code.
//!
//! Read, root-first, so the most specific file comes last and wins on
//! conflict: the user's own (`~/.claude/CLAUDE.md`, then
//! `$XDG_CONFIG_HOME/tern/AGENTS.md`), then for each directory from the
//! repository root (the nearest ancestor with `.git`, else the working
//! directory itself) down to the working directory: `AGENTS.md`,
//! `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`.
//!
//! A line's `@path` imports another file (relative to the importing file,
//! `~/` for home), up to four hops deep, never inside code; each file is
//! included once.

use std::path::{Path, PathBuf};

const MAX_HOPS: usize = 4;
/// A memory file larger than this is cut: it is instructions, not data.
const MAX_FILE: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub path: PathBuf,
    pub text: String,
}

pub fn locate(env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> Vec<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut found = Vec::new();
    if let Some(home) = var("HOME") {
        found.push(home.join(".claude/CLAUDE.md"));
    }
    match (var("XDG_CONFIG_HOME"), var("HOME")) {
        (Some(x), _) => found.push(x.join("tern/AGENTS.md")),
        (None, Some(h)) => found.push(h.join(".config/tern/AGENTS.md")),
        (None, None) => {}
    }
    let root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .collect();
    dirs.reverse();
    for dir in dirs {
        for name in [
            "AGENTS.md",
            "CLAUDE.md",
            ".claude/CLAUDE.md",
            "CLAUDE.local.md",
        ] {
            found.push(dir.join(name));
        }
    }
    found.retain(|p| p.is_file());
    found
}

/// Reads the files and their imports, in order, each once.
pub fn load(paths: &[PathBuf], home: Option<&Path>) -> Vec<MemoryFile> {
    let mut out = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for p in paths {
        include(p, 0, home, &mut seen, &mut out);
    }
    out
}

fn include(
    path: &Path,
    hops: usize,
    home: Option<&Path>,
    seen: &mut Vec<PathBuf>,
    out: &mut Vec<MemoryFile>,
) {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if seen.contains(&key) {
        return;
    }
    seen.push(key);
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE)]).into_owned();
    if bytes.len() > MAX_FILE {
        text.push_str("\n[… cut: the file is larger than 64 KiB]");
    }
    let imports = if hops < MAX_HOPS {
        imports_of(&text)
    } else {
        Vec::new()
    };
    out.push(MemoryFile {
        path: path.to_path_buf(),
        text,
    });
    let base = path.parent().unwrap_or(Path::new("/"));
    for target in imports {
        let resolved = match (target.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ if target.starts_with('/') => PathBuf::from(&target),
            _ => base.join(&target),
        };
        include(&resolved, hops + 1, home, seen, out);
    }
}

/// `@path` tokens outside fenced code blocks and inline code spans.
fn imports_of(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Drop inline code spans before looking.
        let mut visible = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                visible.push(c);
            }
        }
        for word in visible.split_whitespace() {
            if let Some(p) = word.strip_prefix('@') {
                let p = p.trim_end_matches(['.', ',', ';', ':', ')']);
                let looks_like_path = p.contains('/') || p.contains('.');
                if !p.is_empty() && looks_like_path && !p.contains('@') {
                    found.push(p.to_string());
                }
            }
        }
    }
    found
}

/// The system-prompt block carrying the files, or None when there are none.
pub fn render(files: &[MemoryFile]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut out = String::from(
        "The user's memory files follow. They are standing instructions for this project; the later ones are more specific and take precedence.\n",
    );
    for f in files {
        out.push_str(&format!(
            "\n<memory path=\"{}\">\n{}\n</memory>\n",
            f.path.display(),
            f.text.trim_end()
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_first_with_imports_not_in_code() {
        let base = std::env::temp_dir().join(format!(
            "tern-mem-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let repo = base.join("repo");
        let sub = repo.join("crates/app");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(base.join("home/.claude")).unwrap();
        std::fs::write(base.join("home/.claude/CLAUDE.md"), "user prefs").unwrap();
        std::fs::write(base.join("AGENTS.md"), "outside the repo: never read").unwrap();
        std::fs::write(
            repo.join("AGENTS.md"),
            "repo rules, see @docs/style.md and `@not/this.md`",
        )
        .unwrap();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(
            repo.join("docs/style.md"),
            "style guide\n```\n@docs/never.md\n```\n@deeper.md",
        )
        .unwrap();
        std::fs::write(repo.join("docs/deeper.md"), "deeper @style.md").unwrap();
        std::fs::write(repo.join("docs/never.md"), "NEVER").unwrap();
        std::fs::write(sub.join("CLAUDE.local.md"), "local notes").unwrap();
        let home = base.join("home").display().to_string();
        let env = move |k: &str| (k == "HOME").then(|| home.clone());
        let paths = locate(&env, &sub);
        let files = load(&paths, Some(&base.join("home")));
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "user prefs",
                "repo rules, see @docs/style.md and `@not/this.md`",
                "style guide\n```\n@docs/never.md\n```\n@deeper.md",
                "deeper @style.md",
                "local notes"
            ]
        );
        let block = render(&files).unwrap();
        assert!(block.contains("<memory path=") && !block.contains("NEVER"));
    }

    #[test]
    fn imports_stop_after_four_hops() {
        let d = std::env::temp_dir().join(format!(
            "tern-hops-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..7 {
            std::fs::write(
                d.join(format!("m{i}.md")),
                format!("level {i} @m{}.md", i + 1),
            )
            .unwrap();
        }
        let files = load(&[d.join("m0.md")], None);
        assert_eq!(files.len(), MAX_HOPS + 1);
    }
}
