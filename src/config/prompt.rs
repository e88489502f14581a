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

pub fn default_prompt() -> String {
    BASE.to_string()
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
        today(),
        model
    )
}

/// The UTC date as YYYY-MM-DD, computed from the epoch (no time zone data).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// published algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_422), (2025, 11, 30));
        assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
    }
}
