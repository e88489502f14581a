//! A build step: who answers the session's questions — an ACP client,
//! the terminal interface, else line mode, else an SDK's `can_use_tool`,
//! else nobody (asking then denies) — and who fills in the MCP servers'
//! forms.

use std::rc::Rc;

use super::Notes;
use crate::abort::Abort;
use crate::agent::pipeline::Approver;
use crate::config::Runtime;
use crate::frontend::{line, sdk};

/// The people (or the program) on the other side of the session.
pub(super) struct Answerers {
    /// The terminal interface, when this session has one.
    #[cfg(feature = "tui")]
    pub tui: Option<Rc<crate::frontend::tui::Tui>>,
    /// Line mode's reader of standard input.
    pub line_input: Option<Rc<line::Input>>,
    /// Who answers a call that asks.
    pub approver: Option<Rc<dyn Approver>>,
    /// Forms, for the MCP servers' elicitation requests.
    #[cfg(feature = "mcp")]
    pub forms: Option<crate::frontend::elicit::Forms>,
}

/// Takes the terminal for the interface when the session is interactive
/// and the terminal can hold it (else line mode, with one reader for all
/// of standard input), and picks the approver: the `external` program's
/// (an ACP client) when there is one, an SDK's when it asked for the
/// questions, else the interface's, else line mode's.
pub(super) fn who_answers(
    rt: &Runtime,
    interactive: bool,
    external: Option<Rc<dyn Approver>>,
    control: &Rc<sdk::Control>,
    abort: &Abort,
    context_window: u64,
    notes: &mut Notes,
) -> Answerers {
    #[cfg(feature = "tui")]
    let tui = if interactive && crate::frontend::tui::wanted(rt.no_tui) {
        match start_tui(rt, context_window) {
            Ok(t) => Some(t),
            Err(e) => {
                notes.warning(format!(
                    "warning: cannot set up the terminal interface ({e}); using line mode"
                ));
                None
            }
        }
    } else {
        None
    };
    #[cfg(not(feature = "tui"))]
    let _ = (context_window, &notes);
    #[cfg(feature = "tui")]
    let interactive = interactive && tui.is_none();
    let line_input = interactive.then(line::Input::start);
    #[cfg(feature = "tui")]
    let tui_asker = tui.as_ref().map(|t| {
        Rc::new(crate::frontend::tui::TuiApprover::new(
            Rc::clone(t),
            abort.clone(),
        ))
    });
    #[cfg(feature = "tui")]
    let tui_approver = tui_asker.clone().map(|a| a as Rc<dyn Approver>);
    #[cfg(not(feature = "tui"))]
    let tui_approver: Option<Rc<dyn Approver>> = None;
    let line_approver = line_input
        .as_ref()
        .map(|input| Rc::new(line::LineApprover::new(Rc::clone(input), rt.cwd.clone())));
    let approver: Option<Rc<dyn Approver>> = if let Some(a) = external {
        Some(a)
    } else if rt.sdk_permissions {
        Some(Rc::new(sdk::SdkApprover {
            control: Rc::clone(control),
            abort: abort.clone(),
            cwd: rt.cwd.clone(),
        }))
    } else if let Some(a) = tui_approver {
        Some(a)
    } else if let Some(a) = &line_approver {
        Some(Rc::clone(a) as Rc<dyn Approver>)
    } else {
        None
    };
    #[cfg(feature = "mcp")]
    let forms = {
        use crate::frontend::elicit::Forms;
        #[cfg(feature = "tui")]
        let tui_forms = tui_asker.map(Forms::Tui);
        #[cfg(not(feature = "tui"))]
        let tui_forms: Option<Forms> = None;
        if rt.stream_input {
            Some(Forms::Sdk(Rc::clone(control)))
        } else if let Some(f) = tui_forms {
            Some(f)
        } else if let Some(l) = line_approver {
            Some(Forms::Line(l))
        } else {
            rt.mcp_accept_defaults.then_some(Forms::Defaults)
        }
    };
    Answerers {
        #[cfg(feature = "tui")]
        tui,
        line_input,
        approver,
        #[cfg(feature = "mcp")]
        forms,
    }
}

/// Takes the terminal for the interface, its status line filled in.
#[cfg(feature = "tui")]
fn start_tui(rt: &Runtime, context_window: u64) -> std::io::Result<Rc<crate::frontend::tui::Tui>> {
    use crate::frontend::commands;
    let mut names: Vec<(String, String)> = commands::BUILT_IN
        .iter()
        .map(|(usage, about)| {
            let name = usage.split_whitespace().next().unwrap_or(usage);
            (name.to_string(), about.to_string())
        })
        .collect();
    for c in commands::load(&rt.command_dirs) {
        names.push((format!("/{}", c.name), c.description.clone()));
    }
    let status = crate::frontend::tui::Status {
        model: rt.model.clone(),
        mode: rt.mode.as_str().to_string(),
        context: Some((0, context_window)),
        cost: 0.0,
        sandbox: rt.sandbox.is_some(),
        shells: 0,
    };
    crate::frontend::tui::Tui::start(rt.cwd.clone(), names, status)
}
