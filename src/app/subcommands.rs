//! The subcommands that are not a session: `tern mcp list`, `tern
//! sessions`, `tern rewind` and `tern config permissions`.

use crate::cli::Args;
use crate::config::settings::Behavior;
use crate::config::{self, Inputs};
use crate::policy::Policy;
use crate::session::{checkpoint, store};
#[cfg(feature = "mcp")]
use smol::LocalExecutor;

/// The configuration a subcommand reads (no prompt needed); `None` after
/// saying what went wrong.
fn runtime(mut args: Args) -> Option<config::Runtime> {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("tern: cannot determine the working directory: {e}");
            return None;
        }
    };
    args.prompt = Some(String::new());
    let env = |k: &str| std::env::var(k).ok();
    match config::resolve(
        args,
        Inputs {
            env: &env,
            cwd,
            stdin: None,
        },
    ) {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("tern: {e}");
            None
        }
    }
}

/// `tern mcp list`: starts each configured server and says how it went.
pub fn mcp_list(args: Args) -> i32 {
    let Some(rt) = runtime(args) else { return 1 };
    #[cfg(feature = "mcp")]
    {
        let ex: &'static LocalExecutor<'static> = Box::leak(Box::new(LocalExecutor::new()));
        smol::block_on(ex.run(super::mcp_start::list(ex, &rt)))
    }
    #[cfg(not(feature = "mcp"))]
    {
        let _ = rt;
        eprintln!("tern: this tern was built without the mcp feature (cargo build --features mcp)");
        1
    }
}

/// `tern sessions`: this directory's recorded sessions, newest first.
pub fn sessions() -> i32 {
    let Ok(cwd) = std::env::current_dir() else {
        eprintln!("tern: cannot determine the working directory");
        return 1;
    };
    let env = |k: &str| std::env::var(k).ok();
    print!("{}", store::render(&store::list(&env, &cwd)));
    0
}

/// `tern rewind <session> [--to <uuid>] [--dry-run]`.
pub fn rewind(session: &str, to: Option<&str>, dry_run: bool) -> i32 {
    let Ok(cwd) = std::env::current_dir() else {
        eprintln!("tern: cannot determine the working directory");
        return 1;
    };
    let env = |k: &str| std::env::var(k).ok();
    let path = match store::find(&env, &cwd, session) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tern: {e}");
            return 1;
        }
    };
    let plan = match checkpoint::plan(&path, to) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tern: {e}");
            return 1;
        }
    };
    let lines = if dry_run {
        checkpoint::describe(&plan)
    } else {
        checkpoint::apply(&path, &plan)
    };
    for line in lines {
        println!("{line}");
    }
    if let Some(note) = checkpoint::untracked_note(&plan) {
        eprintln!("tern: {note}");
    }
    let failed = plan
        .actions
        .iter()
        .any(|a| matches!(a, checkpoint::Action::Cannot(..)));
    i32::from(failed)
}

/// `tern config permissions`: the effective mode, working directories and
/// rules, each with the file it came from.
pub fn config_permissions(args: Args) -> i32 {
    let Some(rt) = runtime(args) else { return 1 };
    for w in &rt.warnings {
        eprintln!("tern: warning: {w}");
    }
    let policy = Policy::new(rt.mode, rt.rules, &rt.cwd, &rt.extra_dirs);
    let mut out = format!("permission mode: {}\nworking directories:\n", policy.mode);
    for d in &policy.working_dirs {
        out.push_str(&format!("  {}\n", d.display()));
    }
    out.push_str("rules (deny, then ask, then allow):\n");
    if policy.rules.is_empty() {
        out.push_str("  (none)\n");
    }
    for behavior in [Behavior::Deny, Behavior::Ask, Behavior::Allow] {
        for r in policy.rules.iter().filter(|r| r.behavior == behavior) {
            let from = r.origin.as_ref().map_or(String::new(), |o| o.to_string());
            out.push_str(&format!(
                "  {:<6} {:<32} {from}\n",
                format!("{behavior:?}").to_lowercase(),
                r.text()
            ));
        }
    }
    out.push_str(&format!(
        "writing these always asks (outside bypassPermissions):\n  {}\n",
        crate::policy::protected_names().join(" ")
    ));
    for p in &rt.protected {
        out.push_str(&format!("  {}\n", p.display()));
    }
    out.push_str(&format!(
        "kept from commands, hooks and MCP servers: {}\n",
        rt.child_env.remove.join(" ")
    ));
    print!("{out}");
    0
}
