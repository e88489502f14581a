//! MCP tools as tern tools: `mcp__<server>__<tool>`, with the server's
//! schema, `readOnlyHint` deciding concurrency (never permission: it is
//! the server's own claim, so every MCP call is decided as one that may
//! change things), results mapped to text (and images), and interruption
//! sent on as `notifications/cancelled`. A call carries a progress token
//! (its call id), and the server's `notifications/progress` for it go on
//! the call's card or line.

use std::rc::{Rc, Weak};

use smol::future::FutureExt;

use super::Server;
use super::content::{self, Part};
use crate::json::{Value, parse};
use crate::obj;
use crate::policy::Permit;
use crate::tools::{Kind, LocalFuture, Tool, ToolContext, ToolOutput};

/// Longest text result handed to the model from one call.
const MAX_RESULT_CHARS: usize = 100_000;
/// The API's limit on tool names.
const MAX_NAME: usize = 64;

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__server__tool`, cut to the API's length with a short hash to keep
/// cut names apart.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    let hash = full.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{}_{:06x}", &full[..MAX_NAME - 7], hash & 0xff_ffff)
}

enum Op {
    Call(String),
    ListResources,
    ReadResource,
}

pub struct McpTool {
    name: String,
    description: String,
    schema: Value,
    read_only: bool,
    server: Weak<Server>,
    op: Op,
}

// `read_only` holds the server's readOnlyHint (or, for the resource
// tools, the protocol's word that they read): it lets calls overlap and
// nothing more.

impl McpTool {
    pub fn from_listing(server: &Rc<Server>, listing: &Value) -> Option<McpTool> {
        let remote = listing.str_field("name")?;
        let annotations = listing.get("annotations");
        let read_only = annotations
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool)
            == Some(true);
        let mut description = listing
            .str_field("description")
            .unwrap_or_default()
            .to_string();
        if description.is_empty() {
            description = format!("{remote} (from the MCP server {})", server.name);
        }
        let schema = listing
            .get("inputSchema")
            .filter(|s| s.as_object().is_some())
            .cloned()
            .unwrap_or_else(|| obj! { "type" => "object" });
        Some(McpTool {
            name: tool_name(&server.name, remote),
            description,
            schema,
            read_only,
            server: Rc::downgrade(server),
            op: Op::Call(remote.to_string()),
        })
    }
}

/// A server with resources gets a tool to list them and one to read one.
pub fn resource_tools(server: &Rc<Server>) -> Vec<Rc<dyn Tool>> {
    let make = |suffix: &str, description: String, schema: &str, op: Op| -> Rc<dyn Tool> {
        Rc::new(McpTool {
            name: tool_name(&server.name, suffix),
            description,
            schema: parse(schema).unwrap_or_default(),
            read_only: true,
            server: Rc::downgrade(server),
            op,
        })
    };
    vec![
        make(
            "list_resources",
            format!(
                "List the resources the MCP server {} offers (uri, name, type).",
                server.name
            ),
            r#"{"type":"object","properties":{}}"#,
            Op::ListResources,
        ),
        make(
            "read_resource",
            format!(
                "Read one resource of the MCP server {} by its uri.",
                server.name
            ),
            r#"{"type":"object","required":["uri"],"properties":{"uri":{"type":"string"}}}"#,
            Op::ReadResource,
        ),
    ]
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> std::borrow::Cow<'_, Value> {
        std::borrow::Cow::Borrowed(&self.schema)
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn is_read_only(&self, _: &Value) -> bool {
        false
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        self.read_only
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(server) = self.server.upgrade() else {
                return ToolOutput::error("The MCP server is gone");
            };
            // A remote server connecting again after its stream dropped:
            // the call waits for it rather than failing.
            let waited = async {
                let began = std::time::Instant::now();
                while server.status() == super::Status::Pending
                    && began.elapsed() < server.tool_timeout
                {
                    smol::Timer::after(std::time::Duration::from_millis(50)).await;
                }
                true
            }
            .or(async {
                ctx.abort.wait().await;
                false
            })
            .await;
            if !waited {
                return ToolOutput::error("Interrupted by the user");
            }
            let conn = match server.connection() {
                Ok(c) => c,
                Err(e) => return ToolOutput::error(e.to_string()),
            };
            let token = permit.call_id().to_string();
            let _watched = Watched::new(&server, &token, ctx);
            let (method, params) = match &self.op {
                Op::Call(remote) => (
                    "tools/call",
                    obj! {
                        "name" => remote.as_str(),
                        "arguments" => input,
                        "_meta" => obj! { "progressToken" => token.as_str() },
                    },
                ),
                Op::ListResources => ("resources/list", obj! {}),
                Op::ReadResource => (
                    "resources/read",
                    obj! { "uri" => input.str_field("uri").unwrap_or_default() },
                ),
            };
            let id = conn.next_request_id();
            let abort = ctx.abort.clone();
            let asked = async { Some(conn.request(method, params).await) };
            let interrupted = async {
                abort.wait().await;
                None
            };
            let limit = async {
                smol::Timer::after(server.tool_timeout).await;
                Some(Err(super::McpError::CallTimeout(server.tool_timeout)))
            };
            let answer = asked.or(interrupted).or(limit).await;
            let answer = match answer {
                Some(a) => a,
                None => {
                    // Tell the server to stop working on it.
                    conn.abandon(id);
                    let _ = conn
                        .notify(
                            "notifications/cancelled",
                            obj! { "requestId" => id, "reason" => "interrupted by the user" },
                        )
                        .await;
                    return ToolOutput::error("Interrupted by the user");
                }
            };
            match answer {
                Err(e) => ToolOutput::error(format!("MCP server {}: {e}", server.name)),
                Ok(result) => match &self.op {
                    Op::Call(_) => call_output(&result),
                    Op::ListResources => list_output(&result),
                    Op::ReadResource => read_output(&result),
                },
            }
        })
    }
}

/// Where one running call's progress goes: its id, and the reports of
/// the pipeline it runs in.
pub(super) struct Watch {
    id: String,
    reports: Option<Rc<crate::report::Mailbox<crate::report::Report>>>,
}

impl Watch {
    /// `notifications/progress` as the call's progress line:
    /// "3/10 · message" (a bare count when there is no total).
    pub(super) fn report(&self, params: &Value) {
        let num = |k: &str| params.get(k).and_then(Value::as_f64);
        let Some(done) = num("progress") else {
            return;
        };
        let show = |x: f64| {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                format!("{x:.2}")
            }
        };
        let mut text = match num("total") {
            Some(total) => format!("{}/{}", show(done), show(total)),
            None => show(done),
        };
        if let Some(m) = params.str_field("message").filter(|m| !m.trim().is_empty()) {
            text.push_str(" · ");
            text.push_str(&super::serve::one_line(m));
        }
        if let Some(r) = &self.reports {
            r.push(crate::report::Report::ToolProgress {
                id: self.id.clone(),
                text,
            });
        }
    }
}

/// A call's progress token registered with its server while it runs.
struct Watched<'a> {
    server: &'a Server,
    token: &'a str,
}

impl<'a> Watched<'a> {
    fn new(server: &'a Server, token: &'a str, ctx: &ToolContext) -> Watched<'a> {
        server.progress.borrow_mut().push((
            token.to_string(),
            Watch {
                id: token.to_string(),
                reports: ctx.reports.clone(),
            },
        ));
        Watched { server, token }
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        self.server
            .progress
            .borrow_mut()
            .retain(|(t, _)| t != self.token);
    }
}

fn cut(mut text: String) -> String {
    if text.chars().count() > MAX_RESULT_CHARS {
        let total = text.chars().count();
        text = text.chars().take(MAX_RESULT_CHARS).collect();
        text.push_str(&format!(
            "\n[… result cut at {MAX_RESULT_CHARS} of {total} characters]"
        ));
    }
    text
}

fn call_output(result: &Value) -> ToolOutput {
    let mut parts = Vec::new();
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        content::parts(item, &mut parts);
    }
    let (mut text, images) = split(parts);
    if let Some(structured) = result.get("structuredContent") {
        text.push(format!("structuredContent: {}", structured.to_json()));
    }
    let mut out = if result.get("isError").and_then(Value::as_bool) == Some(true) {
        ToolOutput::error(cut(text.join("\n")))
    } else {
        ToolOutput::ok(cut(text.join("\n")))
    };
    out.images = images;
    out
}

fn list_output(result: &Value) -> ToolOutput {
    let lines: Vec<String> = result
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{}  {}  {}",
                r.str_field("uri").unwrap_or_default(),
                r.str_field("name").unwrap_or_default(),
                r.str_field("mimeType").unwrap_or_default()
            )
        })
        .collect();
    if lines.is_empty() {
        return ToolOutput::ok("(no resources)");
    }
    ToolOutput::ok(cut(lines.join("\n")))
}

fn read_output(result: &Value) -> ToolOutput {
    let mut parts = Vec::new();
    for c in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        content::resource(c, &mut parts);
    }
    let (text, images) = split(parts);
    let mut out = ToolOutput::ok(cut(text.join("\n")));
    out.images = images;
    out
}

/// A tool result's text lines, and the media it carries beside them.
fn split(parts: Vec<Part>) -> (Vec<String>, Vec<(String, String)>) {
    let mut text = Vec::new();
    let mut media = Vec::new();
    for p in parts {
        match p {
            Part::Text(t) => text.push(t),
            Part::Media { kind, data } => media.push((kind, data)),
        }
    }
    (text, media)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_hints_decide_concurrency_not_permission() {
        let server = Rc::new(Server {
            name: "s".into(),
            config: crate::mcp::config::ServerConfig {
                name: "s".into(),
                transport: Ok(crate::mcp::config::Transport::Sdk),
                source: "test".into(),
                from_project: false,
                oauth: Default::default(),
            },
            server_info: Default::default(),
            listing: Default::default(),
            status: std::cell::RefCell::new(super::super::Status::Connected),
            conn: Default::default(),
            tools: Default::default(),
            generation: Default::default(),
            stale: Default::default(),
            with_resources: Default::default(),
            tool_timeout: std::time::Duration::from_secs(1),
            prompts: Default::default(),
            prompts_stale: Default::default(),
            subscribe: Default::default(),
            subscribed: Default::default(),
            updated: Default::default(),
            services: Default::default(),
            capabilities: Default::default(),
            progress: Default::default(),
        });
        let listing = parse(r#"{"name":"peek","annotations":{"readOnlyHint":true}}"#).unwrap();
        let hinted = McpTool::from_listing(&server, &listing).unwrap();
        let input = obj! {};
        let ctx = crate::tools::ToolContext::new(
            "/x".into(),
            std::path::PathBuf::from("/x"),
            crate::abort::Abort::new(),
        );
        assert!(hinted.is_concurrency_safe(&input, &ctx));
        assert!(
            !hinted.is_read_only(&input),
            "the server's claim allowed a call"
        );
        let plain = McpTool::from_listing(&server, &parse(r#"{"name":"act"}"#).unwrap()).unwrap();
        assert!(!plain.is_concurrency_safe(&input, &ctx) && !plain.is_read_only(&input));
    }

    #[test]
    fn names_are_sanitised_and_capped_uniquely() {
        assert_eq!(tool_name("my server", "get.sum"), "mcp__my_server__get_sum");
        let a = tool_name("server", &"x".repeat(80));
        let b = tool_name("server", &format!("{}y", "x".repeat(79)));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn results_map_text_images_structured_and_errors() {
        let r = parse(r#"{"content":[{"type":"text","text":"sum is 5"},{"type":"image","data":"AAA","mimeType":"image/png"}],"structuredContent":{"sum":5}}"#).unwrap();
        let out = call_output(&r);
        assert!(!out.is_error);
        assert!(out.content.contains("sum is 5") && out.content.contains("\"sum\":5"));
        assert_eq!(out.images, [("image/png".to_string(), "AAA".to_string())]);
        let e = parse(r#"{"content":[{"type":"text","text":"bad"}],"isError":true}"#).unwrap();
        assert!(call_output(&e).is_error);
        let huge = format!(
            r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
            "z".repeat(200_000)
        );
        assert!(
            call_output(&parse(&huge).unwrap())
                .content
                .contains("result cut at 100000")
        );
    }
}
