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
//!
//! Memory files go into every request, so a repository's `CLAUDE.md`
//! could pull any file the user can read into the conversation (`@~/.ssh/
//! id_rsa`, `@../../other-project/.env`, or a `CLAUDE.md` that is a
//! symlink). Every file — found or imported — is read only when its
//! resolved path lies inside the repository, the user's config folders
//! (`~/.claude`, tern's config folder) or a place the user's own settings
//! allow (`allowedMemoryImports`); the others are skipped and reported to
//! the caller, which says so in `system/init` and with `--verbose`. A file
//! a Read deny rule names (`Read(./.env)`, or a path in
//! `sandbox.filesystem.denyRead`) is skipped the same way: an import
//! puts it in front of the model as surely as Read would.

use std::path::{Path, PathBuf};

const MAX_HOPS: usize = 4;
/// A memory file larger than this is cut: it is instructions, not data.
const MAX_FILE: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub path: PathBuf,
    pub text: String,
}

/// A file that was named but not read: outside every allowed place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Where it resolves to.
    pub path: PathBuf,
    /// The memory file that imported it (None for a file found in place).
    pub from: Option<PathBuf>,
    /// The deny rule that names it (described), when that is why.
    pub denied_by: Option<String>,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(rule) = &self.denied_by {
            let by = match &self.from {
                Some(from) => format!(" (imported by {})", from.display()),
                None => String::new(),
            };
            return write!(
                f,
                "{}{by} was not read: {rule} denies reading it",
                self.path.display()
            );
        }
        match &self.from {
            Some(from) => write!(
                f,
                "@{} (imported by {}) was not read: it is outside the repository and your config folders; allow it with allowedMemoryImports in your user settings",
                self.path.display(),
                from.display()
            ),
            None => write!(
                f,
                "{} was not read: it resolves outside the repository and your config folders; allow it with allowedMemoryImports in your user settings",
                self.path.display()
            ),
        }
    }
}

/// Where memory may come from: resolved folders (and files), less what a
/// Read deny rule names.
#[derive(Debug, Clone)]
pub struct Allowed {
    roots: Vec<PathBuf>,
    denied: Vec<crate::policy::Rule>,
    /// For `~` and relative paths in those rules.
    base: crate::policy::Base,
}

impl Allowed {
    /// The repository root of `cwd`, the user's config folders, and
    /// `extra` (from `allowedMemoryImports`).
    pub fn new(env: &dyn Fn(&str) -> Option<String>, cwd: &Path, extra: &[PathBuf]) -> Allowed {
        let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let mut roots = vec![repository_root(cwd).to_path_buf()];
        if let Some(home) = var("HOME") {
            roots.push(home.join(".claude"));
        }
        match (var("XDG_CONFIG_HOME"), var("HOME")) {
            (Some(x), _) => roots.push(x.join("tern")),
            (None, Some(h)) => roots.push(h.join(".config/tern")),
            (None, None) => {}
        }
        roots.extend(extra.iter().cloned());
        Allowed {
            roots: roots.iter().map(|r| crate::policy::canonical(r)).collect(),
            denied: Vec::new(),
            base: crate::policy::Base::new(cwd, var("HOME")),
        }
    }

    /// Leaves out what the Read deny rules among `rules` name.
    pub fn denying(mut self, rules: &[crate::policy::Rule]) -> Allowed {
        self.denied = rules
            .iter()
            .filter(|r| r.behavior == crate::policy::Behavior::Deny && r.covers_tool("Read"))
            .cloned()
            .collect();
        self
    }

    fn covers(&self, resolved: &Path) -> bool {
        self.roots.iter().any(|r| resolved.starts_with(r))
    }

    /// The deny rule that names this resolved path, described.
    fn denied(&self, resolved: &Path) -> Option<String> {
        self.denied
            .iter()
            .find(|r| r.names_path("Read", resolved, &self.base))
            .map(crate::policy::Rule::describe)
    }
}

/// The nearest ancestor with `.git`, else the working directory itself.
fn repository_root(cwd: &Path) -> &Path {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
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
    let root = repository_root(cwd);
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

/// What [`load`] read and what it left alone.
#[derive(Debug, Default)]
pub struct Loaded {
    pub files: Vec<MemoryFile>,
    pub skipped: Vec<Skipped>,
}

/// Reads the files and their imports, in order, each once, if `allowed`
/// covers where they resolve to.
pub fn load(paths: &[PathBuf], home: Option<&Path>, allowed: &Allowed) -> Loaded {
    let mut out = Loaded::default();
    let mut seen: Vec<PathBuf> = Vec::new();
    for p in paths {
        include(p, None, 0, home, allowed, &mut seen, &mut out);
    }
    out
}

fn include(
    path: &Path,
    from: Option<&Path>,
    hops: usize,
    home: Option<&Path>,
    allowed: &Allowed,
    seen: &mut Vec<PathBuf>,
    out: &mut Loaded,
) {
    let key = crate::policy::canonical(path);
    if seen.contains(&key) {
        return;
    }
    seen.push(key.clone());
    if !key.is_file() {
        return;
    }
    let denied_by = allowed.denied(&key);
    if denied_by.is_some() || !allowed.covers(&key) {
        out.skipped.push(Skipped {
            path: key,
            from: from.map(Path::to_path_buf),
            denied_by,
        });
        return;
    }
    // Opened as resolved, so what was checked is what is read.
    let Ok(bytes) = std::fs::read(&key) else {
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
    out.files.push(MemoryFile {
        path: path.to_path_buf(),
        text,
    });
    // Relative imports are taken from where the file really is.
    let base = key.parent().unwrap_or(Path::new("/"));
    for target in imports {
        let resolved = match (target.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ if target.starts_with('/') => PathBuf::from(&target),
            _ => base.join(&target),
        };
        include(&resolved, Some(path), hops + 1, home, allowed, seen, out);
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
        let loaded = load(
            &paths,
            Some(&base.join("home")),
            &Allowed::new(&env, &sub, &[]),
        );
        let files = loaded.files;
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
        let env = |_: &str| None;
        let files = load(&[d.join("m0.md")], None, &Allowed::new(&env, &d, &[])).files;
        assert_eq!(files.len(), MAX_HOPS + 1);
    }

    #[test]
    fn imports_and_links_out_of_the_repository_are_not_read() {
        let base = crate::policy::canonical(&std::env::temp_dir().join(format!(
            "tern-mem-out-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        )));
        let repo = base.join("repo");
        let home = base.join("home");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::create_dir_all(base.join("notes")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(base.join("other.env"), "OTHER SECRET").unwrap();
        std::fs::write(base.join("notes/style.md"), "shared style").unwrap();
        std::fs::write(home.join(".claude/prefs.md"), "my prefs").unwrap();
        std::fs::write(
            repo.join("CLAUDE.md"),
            "rules @~/.ssh/id_rsa @../other.env @../notes/style.md @~/.claude/prefs.md @docs/ok.md",
        )
        .unwrap();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(repo.join("docs/ok.md"), "in the repo").unwrap();
        // A memory file that is itself a link out of the repository.
        std::os::unix::fs::symlink(base.join("other.env"), repo.join("AGENTS.md")).unwrap();
        let h = home.display().to_string();
        let env = move |k: &str| (k == "HOME").then(|| h.clone());
        let paths = locate(&env, &repo);

        // Unchecked (everything allowed): the secrets would be sent.
        let everywhere = Allowed {
            roots: vec![PathBuf::from("/")],
            denied: Vec::new(),
            base: crate::policy::Base::new(&repo, None),
        };
        let all = load(&paths, Some(&home), &everywhere);
        let text: String = all.files.iter().map(|f| f.text.clone()).collect();
        assert!(text.contains("PRIVATE KEY") && text.contains("OTHER SECRET"));

        let loaded = load(&paths, Some(&home), &Allowed::new(&env, &repo, &[]));
        let text: String = loaded.files.iter().map(|f| f.text.clone()).collect();
        assert!(!text.contains("PRIVATE KEY"), "{text}");
        assert!(!text.contains("OTHER SECRET"), "{text}");
        assert!(!text.contains("shared style"));
        assert!(text.contains("my prefs") && text.contains("in the repo"));
        let skipped: Vec<&Path> = loaded.skipped.iter().map(|s| s.path.as_path()).collect();
        assert!(
            skipped.contains(&home.join(".ssh/id_rsa").as_path()),
            "{skipped:?}"
        );
        assert!(skipped.contains(&base.join("other.env").as_path()));
        assert!(
            loaded.skipped[0]
                .to_string()
                .contains("allowedMemoryImports")
        );

        // The user's settings may allow a place.
        let allowed = Allowed::new(&env, &repo, &[base.join("notes")]);
        let loaded = load(&paths, Some(&home), &allowed);
        let text: String = loaded.files.iter().map(|f| f.text.clone()).collect();
        assert!(text.contains("shared style") && !text.contains("PRIVATE KEY"));
    }

    #[test]
    fn a_read_deny_rule_keeps_a_file_out_of_memory() {
        let repo = std::env::temp_dir().join(format!(
            "tern-mem-deny-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(repo.join("keys")).unwrap();
        let repo = crate::policy::canonical(&repo);
        std::fs::write(repo.join("CLAUDE.md"), "@.env\n@keys/a.key\n@notes.md\n").unwrap();
        std::fs::write(repo.join(".env"), "DOTENV SECRET").unwrap();
        std::fs::write(repo.join("keys/a.key"), "KEY SECRET").unwrap();
        std::fs::write(repo.join("notes.md"), "plain notes").unwrap();
        let env = |_: &str| None;
        let rules = [
            crate::policy::Rule::parse("Read(./.env)", crate::policy::Behavior::Deny, None),
            crate::policy::Rule::parse(
                &format!("Read(/{}/keys)", repo.display()),
                crate::policy::Behavior::Deny,
                None,
            ),
            // Other tools' and other behaviours' rules change nothing here.
            crate::policy::Rule::parse("Edit(./notes.md)", crate::policy::Behavior::Deny, None),
            crate::policy::Rule::parse("Read(./notes.md)", crate::policy::Behavior::Ask, None),
        ];
        let allowed = Allowed::new(&env, &repo, &[]).denying(&rules);
        let loaded = load(&[repo.join("CLAUDE.md")], None, &allowed);
        let text: String = loaded.files.iter().map(|f| f.text.clone()).collect();
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("plain notes"));
        assert_eq!(loaded.skipped.len(), 2);
        let said = loaded.skipped[0].to_string();
        assert!(
            said.contains("the rule Read(./.env)") && said.contains("denies"),
            "{said}"
        );
    }
}
