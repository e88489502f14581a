//! Environment: which assignments a read-only command may carry, and the
//! hardened environment auto-allowed commands run with.
//!
//! An assignment (`NAME=value cmd` or `env NAME=value cmd`) is harmless
//! only for names on [`HARMLESS`], with a literal value of the expected
//! shape: `LC_ALL=/x` would load a locale from a path, `TZ=/x` read a
//! file, `GIT_DIR`, `LD_PRELOAD`, `PAGER`, `LESSOPEN` change what runs.
//!
//! The hardened environment is defence in depth for what the analysis
//! let through: git configuration a repository could set to run programs
//! is overridden from the command line scope (`GIT_CONFIG_COUNT`, which
//! outranks every config file), pagers are `cat`, and variables that make
//! bash or a pager run code are removed.

use super::plan::Arg;

/// Variables a read-only command may set, with the characters its value
/// may hold.
const HARMLESS: &[(&str, &str)] = &[
    ("LC_ALL", LOCALE),
    ("LANG", LOCALE),
    ("LANGUAGE", "A-Za-z0-9_.@:-"),
    ("LC_CTYPE", LOCALE),
    ("LC_COLLATE", LOCALE),
    ("LC_MESSAGES", LOCALE),
    ("LC_NUMERIC", LOCALE),
    ("LC_TIME", LOCALE),
    ("TZ", "A-Za-z0-9_+-/"),
    ("NO_COLOR", WORD),
    ("CLICOLOR", WORD),
    ("CLICOLOR_FORCE", WORD),
    ("FORCE_COLOR", WORD),
    ("COLUMNS", WORD),
    ("LINES", WORD),
    ("TERM", WORD),
    ("GREP_COLOR", "0-9;"),
    ("GREP_COLORS", "A-Za-z0-9;=:"),
    ("TIME_STYLE", "A-Za-z0-9+%:-"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_OPTIONAL_LOCKS", "01"),
    ("GIT_TERMINAL_PROMPT", "01"),
];
const LOCALE: &str = "A-Za-z0-9_.@-";
const WORD: &str = "A-Za-z0-9_.-";

fn allowed(value: &str, set: &str) -> bool {
    if set == "cat" {
        return value == "cat" || value.is_empty();
    }
    let b = set.as_bytes();
    value.chars().all(|c| {
        let mut i = 0;
        while i < b.len() {
            if i + 2 < b.len() && b[i + 1] == b'-' {
                if (b[i] as char..=b[i + 2] as char).contains(&c) {
                    return true;
                }
                i += 3;
            } else {
                if b[i] as char == c {
                    return true;
                }
                i += 1;
            }
        }
        false
    })
}

/// Ok when `NAME=value` in front of a read-only command changes nothing
/// that matters.
pub(crate) fn check_assignment(name: &str, value: &Arg) -> Result<(), String> {
    let Some((_, set)) = HARMLESS.iter().find(|(n, _)| *n == name) else {
        return Err(format!(
            "it sets {name}, which is not a variable tern knows to be harmless"
        ));
    };
    let Some(v) = value.lit() else {
        return Err(format!("it sets {name} to a value computed at run time"));
    };
    if name == "TZ" && (v.starts_with('/') || v.contains("..")) {
        return Err("TZ names a file".into());
    }
    if allowed(v, set) {
        Ok(())
    } else {
        Err(format!("it sets {name} to {v:?}"))
    }
}

/// git settings that make a read-only git command run a program, and the
/// values that stop it. Appended after any the user set, so they win.
pub const GIT_OVERRIDES: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("log.showSignature", "false"),
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
    ("uploadpack.packObjectsHook", ""),
];

/// Variables set for an auto-allowed command.
pub const SET: &[(&str, &str)] = &[("PAGER", "cat"), ("GIT_PAGER", "cat"), ("MANPAGER", "cat")];

/// Variables removed for an auto-allowed command: they make bash, less or
/// git run something, or change how bash expands words.
pub const UNSET: &[&str] = &[
    "LESSOPEN",
    "LESSCLOSE",
    "BASH_ENV",
    "ENV",
    "CDPATH",
    "GLOBIGNORE",
    "SHELLOPTS",
    "BASHOPTS",
    "POSIXLY_CORRECT",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_PARAMETERS",
    "PROMPT_COMMAND",
    "PS4",
];

/// The hardened environment for an auto-allowed command, to lay over the
/// one it would get (`current`: its variables before hardening). Returns
/// variables to set and names to remove.
pub fn hardened(current: &[(String, String)]) -> (Vec<(String, String)>, Vec<String>) {
    let get = |k: &str| {
        current
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let base: usize = get("GIT_CONFIG_COUNT")
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0);
    let mut set: Vec<(String, String)> = SET
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (i, (k, v)) in GIT_OVERRIDES.iter().enumerate() {
        set.push((format!("GIT_CONFIG_KEY_{}", base + i), k.to_string()));
        set.push((format!("GIT_CONFIG_VALUE_{}", base + i), v.to_string()));
    }
    set.push((
        "GIT_CONFIG_COUNT".into(),
        (base + GIT_OVERRIDES.len()).to_string(),
    ));
    let mut unset: Vec<String> = UNSET.iter().map(|s| s.to_string()).collect();
    // Exported functions (`BASH_FUNC_ls%%`) would replace programs.
    unset.extend(
        current
            .iter()
            .filter(|(k, _)| k.starts_with("BASH_FUNC_"))
            .map(|(k, _)| k.clone()),
    );
    (set, unset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(n: &str, v: &str) -> bool {
        check_assignment(n, &Arg::Lit(v.into())).is_ok()
    }

    #[test]
    fn only_harmless_names_and_values() {
        assert!(ok("LC_ALL", "C"));
        assert!(ok("LANG", "en_US.UTF-8"));
        assert!(ok("TZ", "Europe/Paris"));
        assert!(ok("GIT_PAGER", "cat"));
        assert!(!ok("LC_ALL", "/tmp/evil"), "a locale loaded from a path");
        assert!(!ok("TZ", "/etc/shadow"), "a zone file read from a path");
        assert!(!ok("TZ", "../../etc/shadow"));
        assert!(!ok("GIT_PAGER", "sh -c id"));
        assert!(!ok("PAGER", "less"));
        for n in [
            "LD_PRELOAD",
            "GIT_DIR",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_PARAMETERS",
            "LESSOPEN",
            "BASH_ENV",
            "PATH",
            "GIT_TRACE",
            "CDPATH",
            "PYTHONPATH",
        ] {
            assert!(!ok(n, "x"), "{n}");
        }
        assert!(
            check_assignment(
                "LC_ALL",
                &Arg::Opaque {
                    prefix: String::new()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn overrides_follow_the_users_own() {
        let cur = vec![
            ("GIT_CONFIG_COUNT".to_string(), "2".to_string()),
            ("BASH_FUNC_ls%%".to_string(), "() { rm -rf /; }".to_string()),
        ];
        let (set, unset) = hardened(&cur);
        let get = |k: &str| set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("GIT_CONFIG_KEY_2").as_deref(), Some("core.fsmonitor"));
        assert_eq!(
            get("GIT_CONFIG_COUNT"),
            Some((2 + GIT_OVERRIDES.len()).to_string())
        );
        assert!(get("GIT_CONFIG_KEY_0").is_none(), "the user's entries stay");
        assert!(unset.contains(&"BASH_FUNC_ls%%".to_string()));
        assert!(unset.contains(&"LESSOPEN".to_string()));
    }
}
