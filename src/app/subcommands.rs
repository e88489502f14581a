//! The subcommands that are not a session: `tern mcp list`, `tern plugin
//! list`, `tern sessions`, `tern rewind`, `tern config permissions` and `tern trust`.

use super::exit::Exit;
use crate::cli::Args;
use crate::config::settings::Behavior;
use crate::config::{self, Inputs};
use crate::policy::Policy;
use crate::session::transcript::Places;
use crate::session::{checkpoint, store};
#[cfg(feature = "mcp")]
use smol::LocalExecutor;

/// The configuration a subcommand reads (no prompt needed); `None` after
/// saying what went wrong.
fn runtime(mut args: Args) -> Option<config::Runtime> {
    args.prompt = Some(String::new());
    match Inputs::from_process(None).and_then(|inputs| config::resolve(args, inputs)) {
        Ok(mut rt) => {
            // Before an MCP server or a browser starts: see ChildEnv.
            for w in rt.child_env.erase_from_own_environment() {
                eprintln!("tern: warning: {w}");
            }
            Some(rt)
        }
        Err(e) => {
            eprintln!("tern: {e}");
            None
        }
    }
}

/// The working directory and where its transcripts are (no settings are
/// read); `None` after saying what went wrong.
fn transcripts() -> Option<(std::path::PathBuf, Places)> {
    match Inputs::from_process(None) {
        Ok(inputs) => {
            let places = inputs.transcripts();
            Some((inputs.cwd, places))
        }
        Err(e) => {
            eprintln!("tern: {e}");
            None
        }
    }
}

/// `tern trust [DIR]`: a person's yes to the directory's own settings as
/// they are now, for scripted use (the interactive start asks the same);
/// `--revoke` takes it back. The record is pinned: whatever changes later
/// is left out until trusted again.
pub fn trust(mut args: Args, dir: Option<&str>, revoke: bool) -> Exit {
    args.prompt = Some(String::new());
    // Resolved as a session there would be, not trusted whole for it.
    args.trust_project = false;
    let inputs = match Inputs::from_process(None) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
        }
    };
    let wanted = dir.map_or_else(|| inputs.cwd.clone(), |d| inputs.cwd.join(d));
    let Some(cwd) = config::trust::resolved(&wanted).filter(|p| p.is_dir()) else {
        eprintln!("tern: {} is not a directory", wanted.display());
        return Exit::Failure;
    };
    let rt = match config::resolve(args, Inputs { cwd, ..inputs }) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
        }
    };
    let t = &rt.trust;
    if revoke {
        return match rt.trust_store.revoke(&t.dir) {
            Ok(true) => {
                println!("{} is no longer trusted", t.dir.display());
                Exit::Success
            }
            Ok(false) => {
                println!("{} was not trusted", t.dir.display());
                Exit::Success
            }
            Err(e) => {
                eprintln!("tern: {e}");
                Exit::Failure
            }
        };
    }
    if let Err(e) = rt.trust_store.answer(&t.dir, &t.items, true) {
        eprintln!("tern: {e}");
        return Exit::Failure;
    }
    if t.items.is_empty() {
        println!(
            "trusted {}: its settings add nothing that runs or widens now; anything they add later is left out until trusted",
            t.dir.display()
        );
    } else {
        println!("trusted {}, its settings as they are now:", t.dir.display());
        for i in &t.items {
            println!("  {}  [{}]", i.what, i.file);
        }
        println!("A change to any of these, or a new one, is left out until trusted again.");
    }
    for u in &t.user_only {
        eprintln!(
            "tern: {}: {} is never used from a project (only your own settings may set it)",
            u.file, u.what
        );
    }
    Exit::Success
}

/// `tern mcp list`: starts each configured server and says how it went.
pub fn mcp_list(args: Args) -> Exit {
    let Some(rt) = runtime(args) else {
        return Exit::Failure;
    };
    #[cfg(feature = "mcp")]
    {
        let ex: &'static LocalExecutor<'static> = Box::leak(Box::new(LocalExecutor::new()));
        smol::block_on(ex.run(mcp_listing(ex, &rt)))
    }
    #[cfg(not(feature = "mcp"))]
    {
        let _ = rt;
        eprintln!("tern: this tern was built without the mcp feature (cargo build --features mcp)");
        Exit::Failure
    }
}

/// `tern plugin list`: each plugin, what it adds and under what trust,
/// and each folder refused, with why. Fails when any was refused, so a
/// script notices.
pub fn plugin_list(args: Args) -> Exit {
    let Some(rt) = runtime(args) else {
        return Exit::Failure;
    };
    if rt.plugins.is_empty() && rt.plugins_refused.is_empty() {
        println!("no plugins (--plugin-dir DIR, or \"plugins\": [DIR] in settings)");
        return Exit::Success;
    }
    for line in super::doctor::plugin_lines(&rt) {
        println!("{line}");
    }
    if rt.plugins_refused.is_empty() {
        Exit::Success
    } else {
        Exit::Failure
    }
}

/// `tern mcp login NAME` (`login`) and `tern mcp logout NAME`.
pub fn mcp_login(args: Args, name: &str, login: bool) -> Exit {
    let Some(rt) = runtime(args) else {
        return Exit::Failure;
    };
    #[cfg(feature = "mcp")]
    {
        if login {
            super::mcp_login::login(&rt, name)
        } else {
            super::mcp_login::logout(&rt, name)
        }
    }
    #[cfg(not(feature = "mcp"))]
    {
        let _ = (rt, name, login);
        eprintln!("tern: this tern was built without the mcp feature (cargo build --features mcp)");
        Exit::Failure
    }
}

/// `tern sessions`: this directory's recorded sessions, newest first.
pub fn sessions() -> Exit {
    let Some((cwd, places)) = transcripts() else {
        return Exit::Failure;
    };
    print!("{}", store::render(&store::list(&places, &cwd)));
    Exit::Success
}

/// `tern rewind <session> [--to <uuid>] [--dry-run]`.
pub fn rewind(session: &str, to: Option<&str>, dry_run: bool) -> Exit {
    let Some((cwd, places)) = transcripts() else {
        return Exit::Failure;
    };
    let path = match store::find(&places, &cwd, session) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
        }
    };
    let plan = match checkpoint::plan(&path, to) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tern: {e}");
            return Exit::Failure;
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
    Exit::failed_if(failed)
}

/// `tern config permissions`: the effective mode, working directories and
/// rules, each with the file it came from.
pub fn config_permissions(args: Args) -> Exit {
    let Some(rt) = runtime(args) else {
        return Exit::Failure;
    };
    for w in &rt.warnings {
        eprintln!("tern: warning: {w}");
    }
    crate::frontend::trust::notice(&rt.trust);
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
    Exit::Success
}

/// `tern mcp list`, once the configuration is read.
#[cfg(feature = "mcp")]
async fn mcp_listing(ex: &'static LocalExecutor<'static>, rt: &config::Runtime) -> Exit {
    use super::mcp_start::{Wait, offer, offers_line, start};
    use crate::mcp::{self, Status};
    // The project's own servers that trust left out: named, never started.
    let untrusted: Vec<String> = rt
        .trust
        .ignored()
        .filter(|i| i.kind == crate::config::trust::Kind::Mcp)
        .map(|i| format!("{}  needs-trust (the directory's settings are not trusted: tern trust, after a look)", i.what))
        .collect();
    // Listed as a session with a person would offer it.
    let mut notes = super::build::Notes::default();
    let hub = start(ex, rt, Wait::All, None, offer(rt, true, true), &mut notes).await;
    super::say(notes.take());
    let Some(hub) = hub else {
        if untrusted.is_empty() {
            println!(
                "no MCP servers configured (.mcp.json, mcpServers in settings, or --mcp-config)"
            );
        }
        for line in &untrusted {
            println!("{line}");
        }
        return Exit::Success;
    };
    for line in &untrusted {
        println!("{line}");
    }
    let mut failed = false;
    for s in hub.servers() {
        match s.status() {
            Status::Connected => {
                let prompts = s.prompt_count();
                let prompts = if prompts > 0 {
                    format!(", {prompts} prompts")
                } else {
                    String::new()
                };
                println!(
                    "{:<20} connected   {} tools{prompts}  ({})",
                    s.name,
                    s.tool_count(),
                    offers_line(&s)
                )
            }
            Status::Pending => println!("{:<20} pending", s.name),
            Status::Disabled => println!("{:<20} disabled", s.name),
            Status::NeedsApproval => {
                println!("{:<20} needs-approval  {}", s.name, mcp::APPROVAL_HINT)
            }
            Status::NeedsAuth(why) => {
                println!(
                    "{:<20} needs-auth  {why}; run: tern mcp login {}",
                    s.name, s.name
                )
            }
            Status::Failed(reason) => {
                failed = true;
                println!("{:<20} failed      {reason}", s.name);
            }
        }
    }
    hub.shutdown().await;
    Exit::failed_if(failed)
}
