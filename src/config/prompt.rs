//! The default system prompt and the environment facts appended to it.

use std::path::Path;

const BASE: &str = "\
You are tern, a coding agent working in the user's terminal. You help with \
software engineering: reading and changing code, running commands and tests, \
and explaining what you find.

How to work:
- Use the tools to look before you change anything. Read a file before editing \
it; prefer Edit for small changes and Write for new files.
- Search with Grep and Glob rather than Bash `grep`/`find`. Independent reads can \
be requested together in one response; they run in parallel.
- Keep changes focused on what was asked. Follow the conventions of the code \
around you. Do not add files, dependencies or comments the task does not need.
- After changing code, run the relevant build or tests when you can, and fix what \
you broke.
- For work with several steps, keep a task list with TodoWrite.
- A tool result marked as an error (a refused permission, a failed command) is \
information: adjust your approach instead of repeating the same call.
- Never reveal or exfiltrate secrets, and never run destructive commands (deleting \
data, force-pushing, rewriting history) unless the user clearly asked for it.

Answer concisely. When you finish, say briefly what you did and anything left \
undone. Refer to code as path:line so the user can find it.";

/// For small context windows (local models with 4k-8k tokens): the same
/// rules in a few lines.
const COMPACT: &str = "\
You are tern, a coding agent in the user's terminal. Use the tools to read, \
search, edit files and run commands. Read a file before editing it. Keep changes \
small and run tests after changing code. Answer briefly.";

pub fn default_prompt() -> String {
    BASE.to_string()
}

/// The parts of the system prompt, kept apart until the window is known.
#[derive(Debug, Clone, Default)]
pub struct SystemParts {
    /// `--system-prompt`, replacing the default.
    pub custom: Option<String>,
    pub environment: String,
    /// The rendered memory files.
    pub memory: Option<String>,
    /// `--append-system-prompt`.
    pub append: Option<String>,
    /// The skills the Skill tool can load, listed after the environment.
    pub skills: Vec<super::skills::Skill>,
}

impl SystemParts {
    /// The system blocks: the compact default when `compact`, and memory
    /// cut to `memory_budget` bytes with a visible note. Returns the blocks
    /// and, when memory was cut, a notice for the user.
    pub fn compose(&self, compact: bool, memory_budget: usize) -> (Vec<String>, Option<String>) {
        let base = match (&self.custom, compact) {
            (Some(c), _) => c.clone(),
            (None, true) => COMPACT.to_string(),
            (None, false) => default_prompt(),
        };
        // `--system-prompt ""` (the SDK's default) means no base prompt;
        // the API refuses empty text blocks.
        let mut blocks: Vec<String> = [base, self.environment.clone()]
            .into_iter()
            .filter(|b| !b.trim().is_empty())
            .collect();
        if let Some(list) = super::skills::listing(&self.skills, compact) {
            blocks.push(list);
        }
        let mut notice = None;
        if let Some(memory) = &self.memory {
            if memory.len() > memory_budget {
                let mut cut = memory_budget;
                while !memory.is_char_boundary(cut) {
                    cut -= 1;
                }
                blocks.push(format!(
                    "{}\n[memory files cut at {cut} of {} bytes to fit the model's context window]",
                    &memory[..cut],
                    memory.len()
                ));
                notice = Some(format!(
                    "memory files cut to {cut} of {} bytes to fit the model's context window",
                    memory.len()
                ));
            } else {
                blocks.push(memory.clone());
            }
        }
        if let Some(extra) = &self.append {
            blocks.push(extra.clone());
        }
        (blocks, notice)
    }
}

/// Facts about where tern runs, so the model need not spend a turn asking.
pub fn environment(cwd: &Path, model: &str) -> String {
    let is_git = cwd.ancestors().any(|d| d.join(".git").exists());
    format!(
        "<env>\nWorking directory: {}\nIs a git repository: {}\nPlatform: {} ({})\nToday's date: {}\nModel: {}\n</env>",
        cwd.display(),
        if is_git { "yes" } else { "no" },
        std::env::consts::OS,
        std::env::consts::ARCH,
        crate::session::time::today(),
        model
    )
}
