//! Build steps: the tools as the settings leave them, the MCP servers,
//! and the session's own changing tools (StructuredOutput, MCP).

use std::rc::Rc;

use smol::LocalExecutor;

use super::Notes;
use super::Window;
use super::answer::Answerers;
use crate::app::exit::Failure;
use crate::config::Runtime;
use crate::config::settings::Behavior;
use crate::frontend::sdk;
use crate::json::Value;
use crate::model::client::Client;
use crate::tools::scratch::Scratch;
use crate::tools::structured::Structured;
use crate::tools::{Registry, ToolSource};

/// The tools as the settings leave them, for the session's agent and for
/// its workers.
pub(super) struct Tools {
    pub registry: Registry,
    /// Tools a bare deny rule takes out of view (an MCP server's too).
    pub hidden: Vec<String>,
    pub skills: Rc<Vec<crate::config::skills::Skill>>,
    /// What a worker may be given.
    pub worker_tools: Vec<String>,
    pub server_tools: Vec<(String, Value)>,
    /// A coordinator's workers share this folder.
    pub scratchpad: Option<std::path::PathBuf>,
    /// The tools the REPL's scripts register (offered while the context
    /// that registered them lives).
    #[cfg(feature = "repl")]
    pub repl_tools: Rc<std::cell::RefCell<Vec<Rc<crate::tools::repl::Registered>>>>,
}

/// The built-in tools, WebSearch and the REPL as configured, less what a
/// bare deny rule, `--tools` or an empty skill list take away; in
/// coordinator mode the session keeps only the delegating tools and the
/// workers get the rest and a shared scratchpad.
pub(super) fn tools(rt: &Runtime, scratch: &Scratch, notes: &mut Notes) -> Result<Tools, Failure> {
    let mut registry = Registry::builtin();
    let (web_search, web_search_note) = rt.web_search_tool();
    if let Some(note) = web_search_note {
        notes.warning(format!("warning: {note}"));
    }
    if let Some(definition) = web_search {
        registry.add_server_tool("WebSearch", definition);
    }
    #[cfg(feature = "repl")]
    let repl_tools = Rc::new(std::cell::RefCell::new(Vec::new()));
    #[cfg(feature = "repl")]
    if rt.repl {
        registry.add(Rc::new(crate::tools::repl::Repl));
        registry.set_dynamic(
            Rc::new(crate::tools::repl::RegisteredTools(Rc::clone(&repl_tools))),
            Vec::new(),
        );
    }
    let hidden: Vec<String> = rt
        .rules
        .iter()
        .filter(|r| r.behavior == Behavior::Deny && r.spec.is_none())
        .map(|r| r.tool.clone())
        .collect();
    registry.retain(|name| !hidden.iter().any(|h| h == name));
    // Without skills, the Skill tool would only cost tokens.
    let skills = Rc::new(rt.system.skills.clone());
    if skills.is_empty() {
        registry.retain(|name| name != "Skill");
    }
    for w in &rt.skill_warnings {
        notes.warning(format!("warning: {w}"));
    }
    if let Some(only) = &rt.tools {
        for unknown in only.iter().filter(|t| !registry.has(t)) {
            notes.warning(format!(
                "warning: --tools names '{unknown}', which is not a built-in tool; ignored"
            ));
        }
        registry.retain(|name| only.iter().any(|t| t == name));
    }
    // Workers do the work, so they never get Agent.
    let worker_tools: Vec<String> = if rt.coordinator {
        registry
            .names()
            .into_iter()
            .filter(|t| *t != "Agent")
            .collect()
    } else {
        registry.names()
    };
    let server_tools = registry.server_tools();
    let scratchpad = if rt.coordinator {
        let dir = scratch
            .make()
            .map_err(|source| Failure::Scratch {
                dir: rt.temp_dir.clone(),
                source,
            })?
            .join("scratchpad");
        std::fs::create_dir_all(&dir).map_err(|source| Failure::Scratchpad {
            dir: dir.clone(),
            source,
        })?;
        registry = Registry::coordinator();
        Some(dir)
    } else {
        None
    };
    Ok(Tools {
        registry,
        hidden,
        skills,
        worker_tools,
        server_tools,
        scratchpad,
        #[cfg(feature = "repl")]
        repl_tools,
    })
}

/// The session's MCP servers, and their tools as one source.
pub(super) struct Mcp {
    #[cfg(feature = "mcp")]
    pub hub: Option<Rc<crate::mcp::Hub>>,
    /// For the session's agent and for sub-agents (a coordinator itself
    /// only delegates, so there for its workers only).
    pub tools: Option<Rc<dyn ToolSource>>,
}

impl Mcp {
    /// Starts the servers. An SDK session's own servers answer over its
    /// control channel, which is read only once the session runs: no
    /// waiting for them here. Servers are told what this session can
    /// answer before they start: forms where a person or an SDK host is
    /// there, sampling where someone (or an allow rule) can allow it.
    #[cfg(feature = "mcp")]
    pub async fn start(
        ex: &'static LocalExecutor<'static>,
        rt: &Runtime,
        control: &Rc<sdk::Control>,
        interactive: bool,
        notes: &mut Notes,
    ) -> Mcp {
        use crate::app::mcp_start::{Wait, offer, start};
        let offer = offer(
            rt,
            interactive || rt.stream_input,
            interactive || rt.sdk_permissions,
        );
        let hub = if rt.stream_input {
            let carrier: Rc<dyn crate::mcp::sdk::Carrier> = Rc::clone(control) as _;
            start(ex, rt, Wait::None, Some(carrier), offer, notes).await
        } else {
            start(ex, rt, Wait::First, None, offer, notes).await
        };
        let tools = hub.clone().map(|hub| hub as Rc<dyn ToolSource>);
        Mcp { hub, tools }
    }

    /// Without the feature there are no servers, and configured ones are
    /// worth a word.
    #[cfg(not(feature = "mcp"))]
    pub async fn start(
        _ex: &'static LocalExecutor<'static>,
        rt: &Runtime,
        _control: &Rc<sdk::Control>,
        _interactive: bool,
        notes: &mut Notes,
    ) -> Mcp {
        if !rt.mcp_configs.is_empty() || !rt.mcp_settings.is_empty() {
            notes.warning(
                "warning: MCP servers are configured, but this tern was built without the mcp feature",
            );
        }
        Mcp { tools: None }
    }

    /// Who answers the servers' forms, and their sampling requests' yes.
    pub fn set_asker(&self, answerers: &mut Answerers) {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.hub {
            let asker = crate::frontend::elicit::Asker {
                forms: answerers.forms.take(),
                approver: answerers.approver.clone(),
            };
            hub.services().set_asker(Some(Rc::new(asker)));
        }
        #[cfg(not(feature = "mcp"))]
        let _ = answerers;
    }

    /// Lets the servers' sampling requests reach the session's model,
    /// within its budget and counted with its spending.
    pub fn set_sampler(
        &self,
        rt: &Runtime,
        client: &Client,
        window: &Window,
        spend: &Rc<crate::tools::Spend>,
    ) {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.hub {
            hub.services().set_sampler(
                crate::mcp::serve::Sampler {
                    model: crate::model::once::SideModel {
                        client: client.clone(),
                        model: rt.model.clone(),
                        window: window.context_window,
                    },
                    spend: Rc::clone(spend),
                    max_tokens: window.max_tokens,
                    budget: rt.max_budget_usd,
                },
                &rt.rules,
            );
        }
        #[cfg(not(feature = "mcp"))]
        let _ = (rt, client, window, spend);
    }

    /// `[{name, status}]` for `system/init`.
    pub fn summary(&self) -> Vec<Value> {
        #[cfg(feature = "mcp")]
        if let Some(hub) = &self.hub {
            return hub.summary();
        }
        Vec::new()
    }
}

/// The session's own changing tools: StructuredOutput (`--json-schema`,
/// or an SDK's jsonSchema) and, outside coordinator mode, the MCP tools.
pub(super) fn session_tools(rt: &Runtime, tools: &mut Tools, mcp: &Mcp) -> Rc<Structured> {
    let structured = Rc::new(Structured::default());
    if let Some(schema) = &rt.json_schema {
        structured.set_schema(schema.clone());
    }
    let own_mcp = mcp.tools.clone().filter(|_| !rt.coordinator);
    if own_mcp.is_some() || rt.json_schema.is_some() || rt.stream_input {
        tools.registry.set_dynamic(
            Rc::new(crate::tools::structured::SessionTools {
                structured: Rc::clone(&structured),
                mcp: own_mcp,
            }),
            tools.hidden.clone(),
        );
    }
    structured
}
