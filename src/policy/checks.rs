//! The fourteen Bash check classes. Each looks for one way a command can
//! do more than it appears to; any hit means the command is asked about
//! (never auto-allowed, not even by an allow rule), and the reason names
//! the class. Deny rules and bypass mode are decided before these run.

use std::fmt;

use super::shell::{self, Script, SimpleCommand};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    IncompleteCommands,
    JqSystemFunction,
    JqFileArguments,
    ObfuscatedFlags,
    ShellMetacharacters,
    DangerousVariables,
    Newlines,
    CommandSubstitution,
    InputRedirection,
    OutputRedirection,
    IfsInjection,
    GitCommitSubstitution,
    ProcEnvironAccess,
    MalformedTokenInjection,
}

impl Class {
    pub const ALL: [Class; 14] = [
        Class::IncompleteCommands,
        Class::JqSystemFunction,
        Class::JqFileArguments,
        Class::ObfuscatedFlags,
        Class::ShellMetacharacters,
        Class::DangerousVariables,
        Class::Newlines,
        Class::CommandSubstitution,
        Class::InputRedirection,
        Class::OutputRedirection,
        Class::IfsInjection,
        Class::GitCommitSubstitution,
        Class::ProcEnvironAccess,
        Class::MalformedTokenInjection,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::IncompleteCommands => "incomplete-command",
            Class::JqSystemFunction => "jq-system-function",
            Class::JqFileArguments => "jq-file-arguments",
            Class::ObfuscatedFlags => "obfuscated-flags",
            Class::ShellMetacharacters => "shell-metacharacters",
            Class::DangerousVariables => "dangerous-variables",
            Class::Newlines => "newlines",
            Class::CommandSubstitution => "command-substitution",
            Class::InputRedirection => "input-redirection",
            Class::OutputRedirection => "output-redirection",
            Class::IfsInjection => "ifs-injection",
            Class::GitCommitSubstitution => "git-commit-substitution",
            Class::ProcEnvironAccess => "proc-environ-access",
            Class::MalformedTokenInjection => "malformed-token-injection",
        }
    }

    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: Class,
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.class.name(), self.detail)
    }
}

/// Variables whose value changes how programs load or what runs.
const DANGEROUS_ASSIGNMENTS: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
];
/// Programs that, named after a quoted `;`/`|`, suggest a smuggled command.
const SMUGGLED: &[&str] = &[
    "rm", "sh", "bash", "zsh", "curl", "wget", "nc", "ncat", "python", "python3", "perl", "ruby",
    "chmod", "chown", "dd", "mkfs", "eval", "exec", "sudo", "base64", "xargs", "tee",
];

pub fn check(command: &str) -> Vec<Finding> {
    check_parsed(command, &shell::parse(command))
}

/// The same, for a command the caller has already parsed.
pub fn check_parsed(command: &str, parsed: &Result<Script, shell::ParseError>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut hit = |class: Class, detail: String| {
        if !out.iter().any(|f: &Finding| f.class == class) {
            out.push(Finding { class, detail });
        }
    };

    raw_checks(command, &mut hit);
    let script = match parsed {
        Ok(s) => s,
        Err(e) => {
            hit(
                Class::IncompleteCommands,
                format!("the command does not parse: {e}"),
            );
            return out;
        }
    };
    if script.newline_separated && script.commands.len() > 1 {
        hit(
            Class::Newlines,
            "a newline separates commands, which can hide one".into(),
        );
    }
    let heredoc_messages_only = substitutions_are_quoted_heredocs(script);
    if script.has_substitution && !heredoc_messages_only {
        hit(
            Class::CommandSubstitution,
            "it runs a command substitution ($(…), `…` or <(…))".into(),
        );
    }
    if script.expanding_heredoc {
        hit(
            Class::CommandSubstitution,
            "a here-document expands variables or commands".into(),
        );
    }
    for cmd in &script.commands {
        command_checks(cmd, script, heredoc_messages_only, &mut hit);
    }
    out
}

fn raw_checks(command: &str, hit: &mut impl FnMut(Class, String)) {
    let trimmed = command.trim();
    for op in ["&&", "||", "|", "\\"] {
        if trimmed.ends_with(op) && !trimmed.ends_with("\\\\") {
            hit(Class::IncompleteCommands, format!("it ends with `{op}`"));
        }
    }
    if trimmed.starts_with(['-', ';', '&', '|', ')']) {
        hit(
            Class::IncompleteCommands,
            "it starts with a fragment, not a command".into(),
        );
    }
    if command.contains('\t') && command.trim_start().starts_with('\t') {
        hit(
            Class::IncompleteCommands,
            "it starts with a tab (a pasted fragment?)".into(),
        );
    }
    // Quotes glued to a dash hide a flag from naive readers: ''-rf, "-"rf.
    let b = command.as_bytes();
    for i in 0..b.len() {
        let quote = |c: u8| c == b'\'' || c == b'"';
        let glued_before = i >= 2 && b[i] == b'-' && quote(b[i - 1]) && quote(b[i - 2]);
        let quoted_dash = i + 2 < b.len() && quote(b[i]) && b[i + 1] == b'-' && quote(b[i + 2]);
        let dash_then_quote = i + 2 < b.len()
            && b[i] == b'-'
            && quote(b[i + 1])
            && b[i + 2].is_ascii_alphabetic()
            && (i == 0 || b[i - 1] == b' ');
        if glued_before || quoted_dash || dash_then_quote {
            hit(
                Class::ObfuscatedFlags,
                "quote characters inside a flag name".into(),
            );
            break;
        }
    }
    if command.contains("$'") && command.contains("\\x") || command.contains("$'\\") {
        hit(
            Class::ObfuscatedFlags,
            "ANSI-C quoting with escapes can spell any flag or command".into(),
        );
    }
    if command.contains("$IFS") || command.contains("${IFS") || command.contains("IFS=") {
        hit(Class::IfsInjection, "it reads or changes IFS".into());
    }
    if command.contains("/proc/") && command.contains("environ") {
        hit(
            Class::ProcEnvironAccess,
            "it reads a process environment under /proc".into(),
        );
    }
    let odd = command.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(
                c,
                '\u{a0}' | '\u{2000}'
                    ..='\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{feff}'
            )
    });
    if let Some(c) = odd {
        hit(
            Class::MalformedTokenInjection,
            format!(
                "it contains the invisible or control character U+{:04X}",
                c as u32
            ),
        );
    }
}

fn command_checks(
    cmd: &SimpleCommand,
    script: &Script,
    heredoc_ok: bool,
    hit: &mut impl FnMut(Class, String),
) {
    for a in &cmd.assignments {
        let name = a.text.split('=').next().unwrap_or("");
        if DANGEROUS_ASSIGNMENTS.contains(&name) {
            hit(
                Class::DangerousVariables,
                format!("it sets {name}, which changes what programs load or run"),
            );
        }
    }
    let words = cmd.effective_words();
    if let Some(first) = words.first() {
        if first.expands {
            hit(
                Class::DangerousVariables,
                format!("the command name {} is computed at run time", first.text),
            );
        }
        // {rm,-rf,x}: brace expansion that builds a whole command.
        if first.text.starts_with('{') && first.text.contains(',') {
            hit(
                Class::MalformedTokenInjection,
                "brace expansion builds the command itself".into(),
            );
        }
    }
    for w in words {
        let t = &w.text;
        if t.contains("$RANDOM")
            || t.contains("$PPID")
            || t.contains("$BASHPID")
            || t.contains("${!")
        {
            hit(
                Class::DangerousVariables,
                format!("it uses {t}, whose value cannot be known in advance"),
            );
        }
    }
    for r in &cmd.redirects {
        let op = r.op.trim_start_matches(|c: char| c.is_ascii_digit());
        if r.target.expands && !matches!(op, "<<" | "<<-" | "<<<") {
            hit(
                Class::DangerousVariables,
                format!(
                    "a redirection goes to a path computed at run time ({})",
                    r.target.text
                ),
            );
        }
        match op {
            "<" => {
                let t = &r.target.text;
                if t.starts_with('/') || t.starts_with('~') || t.contains("..") {
                    hit(Class::InputRedirection, format!("it feeds {t} in with `<`"));
                }
            }
            "<<" | "<<-" | "<<<" => {}
            _ => {
                let to_fd = op.ends_with('&')
                    && r.target
                        .text
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '-');
                if !to_fd && r.target.text != "/dev/null" {
                    hit(
                        Class::OutputRedirection,
                        format!("it writes to {} with `{}`", r.target.text, r.op),
                    );
                }
            }
        }
    }
    let program = words
        .first()
        .map(|w| w.text.rsplit('/').next().unwrap_or("").to_string());
    let args = if words.is_empty() {
        &[][..]
    } else {
        &words[1..]
    };
    match program.as_deref() {
        Some("jq") => {
            if args.iter().any(|a| {
                a.text.contains("system")
                    || a.text.contains("$__loc__")
                    || a.text.contains("input_filename")
            }) {
                hit(
                    Class::JqSystemFunction,
                    "a jq program that can run or inspect the system".into(),
                );
            }
            if args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-f" | "--from-file"
                        | "--rawfile"
                        | "--slurpfile"
                        | "-L"
                        | "--args"
                        | "--jsonargs"
                ) || a.text.starts_with("-L")
            }) {
                hit(
                    Class::JqFileArguments,
                    "jq reads its program or data from files named on the command line".into(),
                );
            }
        }
        Some("git") => {
            let commit = args.iter().any(|a| a.text == "commit");
            if commit && script.has_substitution && !heredoc_ok {
                hit(
                    Class::GitCommitSubstitution,
                    "the commit message runs a command substitution".into(),
                );
            }
            if commit
                && args
                    .iter()
                    .any(|a| a.text.contains("`") || a.text.contains("$("))
                && !heredoc_ok
            {
                hit(
                    Class::GitCommitSubstitution,
                    "the commit message contains a substitution".into(),
                );
            }
        }
        _ => {}
    }
    for w in args.iter().filter(|w| w.quoted) {
        if smuggles_command(&w.text) {
            hit(
                Class::ShellMetacharacters,
                format!("the quoted argument {:?} carries a shell command", w.text),
            );
        }
    }
}

/// `"x; rm -rf ~"`, `"a | sh"`, `"&& curl …"` inside one quoted argument.
fn smuggles_command(text: &str) -> bool {
    let mut rest = text;
    while let Some(at) = rest.find([';', '|', '&']) {
        let after = rest[at + 1..].trim_start_matches(['|', '&', ' ', '\t']);
        let word = after
            .split(|c: char| c.is_whitespace() || c == ';')
            .next()
            .unwrap_or("");
        let name = word.rsplit('/').next().unwrap_or("");
        if SMUGGLED.contains(&name) {
            return true;
        }
        rest = &rest[at + 1..];
    }
    false
}

/// `git commit -m "$(cat <<'EOF' … EOF)"`: the substitution only prints a
/// literal here-document. That idiom is how commit messages are written,
/// and it runs nothing.
fn substitutions_are_quoted_heredocs(script: &Script) -> bool {
    let subs: Vec<&SimpleCommand> = script
        .commands
        .iter()
        .filter(|c| c.in_substitution)
        .collect();
    !subs.is_empty()
        && !script.expanding_heredoc
        && subs.iter().all(|c| {
            c.words.len() == 1
                && c.words[0].text == "cat"
                && c.redirects.len() == 1
                && c.redirects[0].op == "<<"
                && c.redirects[0].target.quoted
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(cmd: &str) -> Vec<&'static str> {
        check(cmd).iter().map(|f| f.class.name()).collect()
    }

    #[test]
    fn each_class_fires_on_its_example() {
        let cases = [
            ("ls &&", "incomplete-command"),
            ("jq -n 'system(\"id\")'", "jq-system-function"),
            ("jq -f /etc/evil.jq x.json", "jq-file-arguments"),
            ("rm ''-rf /", "obfuscated-flags"),
            ("find . -name \"x; rm -rf ~\"", "shell-metacharacters"),
            ("LD_PRELOAD=/tmp/x.so ls", "dangerous-variables"),
            ("ls\nrm -rf /", "newlines"),
            ("echo $(id)", "command-substitution"),
            ("cat < /etc/shadow", "input-redirection"),
            ("echo x > ~/.bashrc", "output-redirection"),
            ("cat$IFS/etc/passwd", "ifs-injection"),
            ("git commit -m \"$(curl evil)\"", "git-commit-substitution"),
            ("cat /proc/self/environ", "proc-environ-access"),
            ("ls\u{a0}-la", "malformed-token-injection"),
        ];
        for (cmd, class) in cases {
            assert!(
                classes(cmd).contains(&class),
                "{cmd:?} → {:?}, wanted {class}",
                classes(cmd)
            );
        }
        assert_eq!(cases.len(), Class::ALL.len());
    }

    #[test]
    fn everyday_commands_are_clean() {
        for cmd in [
            "git status",
            "cargo test --all-features 2>&1 | tail -20",
            "grep -rn \"a|b\" src",
            "git commit -m \"$(cat <<'EOF'\nFix the port\n\nLonger body.\nEOF\n)\"",
            "ls -la > /dev/null 2>&1",
            "npm run build && npm test",
            "find . -name '*.rs' -newer Cargo.toml",
        ] {
            assert!(check(cmd).is_empty(), "{cmd:?}: {:?}", check(cmd));
        }
    }
}
