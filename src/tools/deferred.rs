//! MCP tools held back from a window they would crowd, and ToolSearch,
//! which brings the ones the model asks for into the next request.
//!
//! Three servers of twenty tools each are about 8,000 tokens of schemas:
//! twice a 4k window. When the MCP tools' definitions would take more
//! than a share of the window (10%, as Claude Code's automatic tool
//! search), the request carries ToolSearch instead, its description
//! naming every held-back tool; a search marks what it finds as loaded,
//! and loaded tools are offered in full from the next request on. This
//! works with any provider: no server-side deferral is needed.
//!
//! Holding a tool back changes only what is advertised. A call to a
//! held-back tool still reaches it (a model may know its name from an
//! earlier session) and goes through the same schema check and policy.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use super::input::{Fields, Schema};
use super::{Kind, LocalFuture, Tool, ToolContext, ToolOutput};
use crate::context::HoldBack;
use crate::json::Value;
use crate::model::content_text;
use crate::obj;
use crate::policy::Permit;

pub(crate) const NAME: &str = "ToolSearch";

/// Matches a keyword search returns unless told otherwise, and at most.
const DEFAULT_RESULTS: usize = 5;
const MAX_RESULTS: usize = 20;

/// One registry's held-back tools: what was held back from the last
/// request built, and what the model has loaded since.
pub(crate) struct Deferral {
    search: HoldBack,
    /// The share of the window the MCP definitions may take, in tokens.
    limit: u64,
    loaded: RefCell<BTreeSet<String>>,
    /// Every MCP tool the last request held back or loaded: what a
    /// search looks through, so the model finds only what it was told of.
    catalog: RefCell<Vec<Rc<dyn Tool>>>,
}

impl Deferral {
    pub(crate) fn new(search: HoldBack, context_window: u64) -> Option<Rc<Deferral>> {
        let limit = match search {
            HoldBack::Never => return None,
            HoldBack::Always => 0,
            HoldBack::Auto(percent) => context_window.saturating_mul(u64::from(percent)) / 100,
        };
        Some(Rc::new(Deferral {
            search,
            limit,
            loaded: RefCell::new(BTreeSet::new()),
            catalog: RefCell::new(Vec::new()),
        }))
    }

    /// Whether MCP definitions of this many tokens are held back.
    pub(crate) fn holds_back(&self, tokens: u64) -> bool {
        tokens > 0 && (self.search == HoldBack::Always || tokens > self.limit)
    }

    pub(crate) fn is_loaded(&self, name: &str) -> bool {
        self.loaded.borrow().contains(name)
    }

    /// What a resumed conversation had loaded stays loaded: the MCP tools
    /// its searches returned and those it called. (A search's result names
    /// each tool on a line of its own, as [`ToolSearch`] writes it.)
    pub(crate) fn reload(&self, history: &[Value]) {
        let blocks = || {
            history
                .iter()
                .filter_map(|m| m.get("content").and_then(Value::as_array))
                .flatten()
        };
        let searches: Vec<&str> = blocks()
            .filter(|b| {
                b.str_field("type") == Some("tool_use") && b.str_field("name") == Some(NAME)
            })
            .filter_map(|b| b.str_field("id"))
            .collect();
        let mut loaded = self.loaded.borrow_mut();
        for b in blocks() {
            match b.str_field("type") {
                Some("tool_use") => {
                    if let Some(name) = b.str_field("name").filter(|n| n.starts_with("mcp__")) {
                        loaded.insert(name.to_string());
                    }
                }
                Some("tool_result")
                    if b.str_field("tool_use_id")
                        .is_some_and(|id| searches.contains(&id))
                        && b.get("is_error").and_then(Value::as_bool) != Some(true) =>
                {
                    for name in content_text(b.get("content"))
                        .lines()
                        .filter_map(loaded_name)
                    {
                        loaded.insert(name.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// Remembers what the request being built holds back or has loaded.
    pub(crate) fn set_catalog(&self, tools: Vec<Rc<dyn Tool>>) {
        *self.catalog.borrow_mut() = tools;
    }

    /// Whether the last request built offered ToolSearch.
    pub(crate) fn is_offered(&self) -> bool {
        !self.catalog.borrow().is_empty()
    }

    /// ToolSearch's definition, naming what it can load, a server at a
    /// time (the prefix once, not sixty times).
    pub(crate) fn definition(&self, compact: bool) -> Value {
        let catalog = self.catalog.borrow();
        let mut servers: Vec<(&str, Vec<&str>)> = Vec::new();
        for t in catalog.iter() {
            let (server, tool) = split(t.name());
            match servers.iter_mut().find(|(s, _)| *s == server) {
                Some((_, tools)) => tools.push(tool),
                None => servers.push((server, vec![tool])),
            }
        }
        let mut text = String::from(if compact {
            "Load MCP tools before calling them. query: \"select:<name>[,<name>...]\" or keywords. Tools:"
        } else {
            "Finds MCP tools whose schemas are not loaded yet, and loads them: a tool it \
             returns can be called directly from your next step. Load a tool before you \
             call it, and load every tool you expect to need in one search. query is \
             \"select:<name>[,<name>...]\" for tools whose names you know, or keywords \
             (a word after + must be in the tool's name). The tools:"
        });
        for (server, tools) in servers {
            text.push_str(&format!(" mcp__{server}__ {{{}}}", tools.join(", ")));
        }
        text.push('.');
        obj! {
            "name" => NAME,
            "description" => text,
            "input_schema" => SCHEMA.get().clone(),
        }
    }

    /// The catalog's tools a query finds, best first.
    fn find(&self, query: &str, max: usize) -> Result<Vec<Rc<dyn Tool>>, String> {
        let catalog = self.catalog.borrow();
        if let Some(names) = query.trim().strip_prefix("select:") {
            let mut found = Vec::new();
            let mut missing = Vec::new();
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                match select(&catalog, name) {
                    Some(t) => found.push(t),
                    None => missing.push(name),
                }
            }
            if !missing.is_empty() {
                return Err(format!(
                    "No deferred tool is called {}; the names are in ToolSearch's description",
                    missing.join(", ")
                ));
            }
            return Ok(found);
        }
        let terms: Vec<String> = query
            .split_whitespace()
            .map(|w| w.to_lowercase())
            .filter(|w| w != "+")
            .collect();
        let mut scored: Vec<(u32, Rc<dyn Tool>)> = catalog
            .iter()
            .filter_map(|t| score(t.as_ref(), &terms).map(|s| (s, Rc::clone(t))))
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name().cmp(b.1.name())));
        Ok(scored.into_iter().take(max).map(|(_, t)| t).collect())
    }
}

/// The tool a search result's line says was loaded (`- mcp__s__t: …`).
fn loaded_name(line: &str) -> Option<&str> {
    let (name, _) = line.strip_prefix("- ")?.split_once(':')?;
    name.starts_with("mcp__").then_some(name)
}

/// `mcp__server__tool` as (server, tool); a name of another shape is all
/// tool.
fn split(name: &str) -> (&str, &str) {
    name.strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .unwrap_or(("", name))
}

/// A tool by its full name, or by its name on its server when only one
/// server has it.
fn select(catalog: &[Rc<dyn Tool>], name: &str) -> Option<Rc<dyn Tool>> {
    if let Some(t) = catalog.iter().find(|t| t.name() == name) {
        return Some(Rc::clone(t));
    }
    let mut by_short = catalog.iter().filter(|t| split(t.name()).1 == name);
    match (by_short.next(), by_short.next()) {
        (Some(t), None) => Some(Rc::clone(t)),
        _ => None,
    }
}

/// How well a tool matches: a term in its name counts most, in its
/// server's name next, in its description least. `None` when a `+term`
/// is missing from its name, or nothing matches.
fn score(tool: &dyn Tool, terms: &[String]) -> Option<u32> {
    let name = tool.name().to_lowercase();
    let (server, short) = split(&name);
    let description = tool.description().to_lowercase();
    let mut total = 0;
    for term in terms {
        if let Some(required) = term.strip_prefix('+') {
            if !name.contains(required) {
                return None;
            }
            total += 10;
        } else if name == *term || short == term.as_str() {
            total += 20;
        } else if short.contains(term.as_str()) {
            total += 10;
        } else if server.contains(term.as_str()) || name.starts_with(term.as_str()) {
            total += 5;
        } else if description.contains(term.as_str()) {
            total += 2;
        }
    }
    (total > 0).then_some(total)
}

static SCHEMA: Schema = Schema::new(
    r#"{"type":"object","additionalProperties":false,"required":["query"],"properties":{
    "query":{"type":"string","description":"\"select:<name>[,<name>...]\", or keywords"},
    "max_results":{"type":"integer","minimum":1,"description":"How many matches a keyword search loads at most (5 unless set)"}}}"#,
);

/// The tool the model calls; the registry offers it while it holds tools
/// back.
pub(crate) struct ToolSearch(pub(crate) Rc<Deferral>);

impl Tool for ToolSearch {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Finds MCP tools whose schemas are not loaded yet, and loads them."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn is_read_only(&self, _: &Value) -> bool {
        // It reads the session's own catalog; loading changes what the
        // next request offers, never what runs.
        true
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        read(input).map(|_| ())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        _: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let found = match read(&input).and_then(|(q, max)| self.0.find(q, max)) {
                Ok(found) => found,
                Err(e) => return ToolOutput::error(e),
            };
            if found.is_empty() {
                return ToolOutput::ok(
                    "No deferred tool matches. Try other words, or select: with a name from \
                     ToolSearch's description.",
                );
            }
            let mut loaded = self.0.loaded.borrow_mut();
            let mut out = String::from(
                "Loaded; call these directly from your next step (their schemas are in your tool list now):",
            );
            for t in &found {
                loaded.insert(t.name().to_string());
                out.push_str(&format!(
                    "\n- {}: {}",
                    t.name(),
                    super::first_sentence(t.description())
                ));
            }
            ToolOutput::ok(out)
        })
    }
}

fn read(input: &Value) -> Result<(&str, usize), String> {
    let f = Fields::of(input)?;
    let query = f.text("query")?;
    if query.trim().is_empty() {
        return Err("query is empty".into());
    }
    let max = f
        .opt_count("max_results")?
        .unwrap_or(DEFAULT_RESULTS)
        .clamp(1, MAX_RESULTS);
    Ok((query, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str, &'static str);

    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            self.1
        }
        fn input_schema(&self) -> Cow<'_, Value> {
            Cow::Owned(obj! { "type" => "object" })
        }
        fn kind(&self) -> Kind {
            Kind::Other
        }
        fn is_read_only(&self, _: &Value) -> bool {
            false
        }
        fn call<'a>(
            &'a self,
            _: Value,
            _: &'a ToolContext,
            _: &'a Permit,
        ) -> LocalFuture<'a, ToolOutput> {
            Box::pin(async { ToolOutput::ok("") })
        }
    }

    fn deferral() -> Rc<Deferral> {
        let d = Deferral::new(HoldBack::Always, 4096).unwrap();
        let tools: Vec<Rc<dyn Tool>> = vec![
            Rc::new(Named(
                "mcp__tracker__create_issue",
                "Create an issue in the tracker.",
            )),
            Rc::new(Named("mcp__tracker__list_issues", "List issues.")),
            Rc::new(Named(
                "mcp__calendar__create_event",
                "Create an event. Invites people.",
            )),
            Rc::new(Named(
                "mcp__files__share_document",
                "Share a document with people.",
            )),
        ];
        d.set_catalog(tools);
        d
    }

    fn names(found: Result<Vec<Rc<dyn Tool>>, String>) -> Vec<String> {
        found
            .unwrap()
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    #[test]
    fn a_resumed_history_reloads_what_searches_found_and_calls_named() {
        let d = Deferral::new(HoldBack::Always, 4096).unwrap();
        let history = crate::json::parse(
            r#"[
            {"role":"assistant","content":[
                {"type":"tool_use","id":"s1","name":"ToolSearch","input":{"query":"x"}},
                {"type":"tool_use","id":"s2","name":"ToolSearch","input":{"query":"y"}},
                {"type":"tool_use","id":"b1","name":"Bash","input":{"command":"cat notes"}},
                {"type":"tool_use","id":"c1","name":"mcp__files__get_share","input":{"id":"1"}}]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"s1","content":"Loaded; call these:\n- mcp__calendar__list_room: List a room.\n- Read: not an MCP tool"},
                {"type":"tool_result","tool_use_id":"s2","is_error":true,"content":"- mcp__tracker__get_issue: refused"},
                {"type":"tool_result","tool_use_id":"b1","content":[{"type":"text","text":"- mcp__tracker__delete_label: a note"}]},
                {"type":"tool_result","tool_use_id":"c1","content":"ok"}]}
        ]"#,
        )
        .unwrap();
        d.reload(history.as_array().unwrap());
        let loaded: Vec<String> = d.loaded.borrow().iter().cloned().collect();
        assert_eq!(
            loaded,
            ["mcp__calendar__list_room", "mcp__files__get_share"]
        );
    }

    #[test]
    fn select_takes_full_or_unique_short_names_and_names_what_is_missing() {
        let d = deferral();
        assert_eq!(
            names(d.find("select:mcp__tracker__list_issues, create_event", 5)),
            ["mcp__tracker__list_issues", "mcp__calendar__create_event"]
        );
        let Err(err) = d.find("select:list_issues,mcp__tracker__nope", 5) else {
            panic!("a missing name must be an error");
        };
        assert!(err.contains("mcp__tracker__nope"), "{err}");
        assert!(!err.contains("list_issues,"), "{err}");
    }

    #[test]
    fn keywords_rank_names_over_descriptions_and_plus_is_required() {
        let d = deferral();
        assert_eq!(
            names(d.find("create", 5))[..2],
            ["mcp__calendar__create_event", "mcp__tracker__create_issue"]
        );
        assert_eq!(
            names(d.find("people", 5)),
            ["mcp__calendar__create_event", "mcp__files__share_document"]
        );
        // The required word keeps the tracker's tools only; the other
        // ranks them.
        assert_eq!(
            names(d.find("+tracker create", 5)),
            ["mcp__tracker__create_issue", "mcp__tracker__list_issues"]
        );
        assert_eq!(names(d.find("create", 1)).len(), 1);
        assert!(names(d.find("+slack create", 5)).is_empty());
    }

    #[test]
    fn the_definition_names_every_tool_a_server_at_a_time() {
        let d = deferral();
        let def = d.definition(true);
        let text = def.str_field("description").unwrap();
        assert!(
            text.contains("mcp__tracker__ {create_issue, list_issues}"),
            "{text}"
        );
        assert!(text.contains("mcp__files__ {share_document}"), "{text}");
    }

    #[test]
    fn settings_parse_and_decide() {
        assert_eq!(HoldBack::parse("auto:25").unwrap(), HoldBack::Auto(25));
        assert_eq!(HoldBack::parse("TRUE").unwrap(), HoldBack::Always);
        assert_eq!(HoldBack::parse("false").unwrap(), HoldBack::Never);
        assert!(HoldBack::parse("auto:200").is_err());
        assert!(HoldBack::parse("sometimes").is_err());
        assert!(Deferral::new(HoldBack::Never, 4096).is_none());
        let auto = Deferral::new(HoldBack::Auto(10), 4096).unwrap();
        assert!(!auto.holds_back(409));
        assert!(auto.holds_back(410));
        assert!(!auto.holds_back(0), "nothing to hold back");
        assert!(
            Deferral::new(HoldBack::Always, 200_000)
                .unwrap()
                .holds_back(1)
        );
    }
}
