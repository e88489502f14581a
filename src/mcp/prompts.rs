//! What MCP servers offer besides tools: their prompts become slash
//! commands (`/mcp__server__prompt args`), their resources can be named
//! in a prompt (`@server:uri`, read and attached; subscribed to when the
//! server allows, and a change is told to the model before its next
//! request).

use std::rc::Rc;

use super::{Hub, McpError, Server, Status, content};
use crate::json::Value;
use crate::obj;

#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub name: String,
    pub description: String,
    /// (name, required), in the order arguments are given.
    pub arguments: Vec<(String, bool)>,
}

impl Prompt {
    /// Its arguments as `/help` shows them: `<needed> [optional]`.
    fn usage(&self) -> String {
        let words: Vec<String> = self
            .arguments
            .iter()
            .map(|(a, r)| {
                if *r {
                    format!("<{a}>")
                } else {
                    format!("[{a}]")
                }
            })
            .collect();
        words.join(" ")
    }

    fn from_listing(v: &Value) -> Option<Prompt> {
        Some(Prompt {
            name: v.str_field("name")?.to_string(),
            description: v.str_field("description").unwrap_or_default().to_string(),
            arguments: v
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| {
                    Some((
                        a.str_field("name")?.to_string(),
                        a.get("required").and_then(Value::as_bool) == Some(true),
                    ))
                })
                .collect(),
        })
    }
}

/// Every prompt of a server.
pub(super) async fn fetch(conn: &super::rpc::Connection) -> Result<Vec<Prompt>, McpError> {
    let listing = super::list_all(conn, "prompts/list", "prompts").await?;
    Ok(listing.iter().filter_map(Prompt::from_listing).collect())
}

/// Words as a shell would split them: spaces apart, quotes keep them together.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// The arguments object for `prompts/get`: words in the declared order,
/// the last argument taking whatever is left.
fn arguments(prompt: &Prompt, args: &str) -> Result<Value, String> {
    let mut given = words(args);
    let mut map = crate::json::Map::new();
    let n = prompt.arguments.len();
    for (i, (name, required)) in prompt.arguments.iter().enumerate() {
        let value = if i + 1 == n && given.len() > 1 {
            Some(given.join(" "))
        } else if given.is_empty() {
            None
        } else {
            Some(given.remove(0))
        };
        match value {
            Some(v) => map.insert(name.as_str(), v),
            None if *required => {
                return Err(format!(
                    "the prompt needs its argument {name}: /{} {}",
                    prompt.name,
                    prompt.usage()
                ));
            }
            None => {}
        }
        if i + 1 == n {
            given.clear();
        }
    }
    if !given.is_empty() && n == 0 {
        return Err(format!("the prompt {} takes no arguments", prompt.name));
    }
    Ok(Value::Object(map))
}

/// MCP content as the blocks of a user message.
fn blocks_of(item: &Value, out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    content::parts(item, &mut parts);
    out.extend(parts.into_iter().map(content::block));
}

fn text(t: &str) -> Value {
    obj! { "type" => "text", "text" => t }
}

/// `@server:uri` mentions in a prompt: at the start or after a space,
/// up to the next space, without trailing punctuation.
fn mentions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut prev = ' ';
    for (i, c) in text.char_indices() {
        if c == '@' && prev.is_whitespace() {
            let rest = &text[i + 1..];
            let word = rest.split(char::is_whitespace).next().unwrap_or("");
            let word = word.trim_end_matches(['.', ',', ';', '!', '?', ')', '"', '\'']);
            if let Some((server, uri)) = word.split_once(':')
                && !server.is_empty()
                && uri.contains(':')
                && !out.iter().any(|(s, u)| s == server && u == uri)
            {
                out.push((server.to_string(), uri.to_string()));
            }
        }
        prev = c;
    }
    out
}

impl Hub {
    fn connected(&self) -> Vec<Rc<Server>> {
        self.servers()
            .into_iter()
            .filter(|s| s.status() == Status::Connected)
            .collect()
    }

    /// `(command, description)` of every prompt, for `/help` and `system/init`.
    pub fn prompt_commands(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for s in self.connected() {
            for p in s.prompts.borrow().iter() {
                let mut what = format!("{} (MCP prompt of {})", p.description, s.name);
                if !p.arguments.is_empty() {
                    what = format!("{} {what}", p.usage());
                }
                out.push((
                    super::tool::tool_name(&s.name, &p.name),
                    what.trim().to_string(),
                ));
            }
        }
        out
    }

    /// `/mcp__server__prompt args` as the messages the server gives for
    /// it; `None` when the text is not one of this hub's prompts.
    pub async fn expand_prompt(&self, text: &str) -> Option<Result<Vec<Value>, String>> {
        let rest = text.trim_start().strip_prefix('/')?;
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if !name.starts_with("mcp__") {
            return None;
        }
        let found = self.servers().into_iter().find_map(|s| {
            let p = s
                .prompts
                .borrow()
                .iter()
                .find(|p| super::tool::tool_name(&s.name, &p.name) == name)
                .cloned();
            p.map(|p| (s, p))
        });
        let Some((server, prompt)) = found else {
            return Some(Err(format!(
                "/{name} is not a prompt of any connected MCP server (/help lists them)"
            )));
        };
        Some(self.get_prompt(&server, &prompt, args).await)
    }

    async fn get_prompt(
        &self,
        server: &Rc<Server>,
        prompt: &Prompt,
        args: &str,
    ) -> Result<Vec<Value>, String> {
        let arguments = arguments(prompt, args)?;
        let conn = server.connection().map_err(|e| e.to_string())?;
        let answer = conn
            .request(
                "prompts/get",
                obj! { "name" => prompt.name.as_str(), "arguments" => arguments },
            )
            .or_timeout(server.tool_timeout)
            .await
            .map_err(|e| format!("MCP server {}: {e}", server.name))?;
        let mut blocks = Vec::new();
        for m in answer
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // A prompt's assistant turns are part of what it asks; they
            // are kept, marked, in the one message sent.
            if m.str_field("role") == Some("assistant") {
                blocks.push(text("[assistant]"));
            }
            if let Some(c) = m.get("content") {
                blocks_of(c, &mut blocks);
            }
        }
        if blocks.is_empty() {
            return Err(format!(
                "the MCP server {} gave no messages for /{}",
                server.name, prompt.name
            ));
        }
        Ok(blocks)
    }

    /// The resources a prompt names (`@server:uri`), read and attached;
    /// subscribed to where the server allows. A mention that cannot be
    /// read is attached as the reason.
    pub async fn attach_mentions(&self, prompt: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for (name, uri) in mentions(prompt) {
            let Some(server) = self.server(&name) else {
                continue;
            };
            let read = async {
                let conn = server.connection()?;
                let answer = conn
                    .request("resources/read", obj! { "uri" => uri.as_str() })
                    .or_timeout(server.tool_timeout)
                    .await?;
                if server.subscribe.get() && !server.subscribed.borrow().contains(&uri) {
                    let subscribed = conn
                        .request("resources/subscribe", obj! { "uri" => uri.as_str() })
                        .or_timeout(server.tool_timeout)
                        .await;
                    if subscribed.is_ok() {
                        server.subscribed.borrow_mut().push(uri.clone());
                    }
                }
                Ok::<Value, McpError>(answer)
            };
            match read.await {
                Ok(answer) => {
                    out.push(text(&format!("Attached by the user: @{name}:{uri}")));
                    for c in answer
                        .get("contents")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let mut parts = Vec::new();
                        content::resource(c, &mut parts);
                        out.extend(parts.into_iter().map(content::block));
                    }
                }
                Err(e) => out.push(text(&format!("[@{name}:{uri} could not be read: {e}]"))),
            }
        }
        out
    }

    /// Resources that changed since the model last heard, as reminders.
    pub fn resource_news(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self.servers() {
            for uri in s.updated.borrow_mut().drain(..) {
                out.push(format!(
                    "<system-reminder>The MCP resource @{}:{uri} has changed since it was attached; read it again (read_resource) before relying on it.</system-reminder>",
                    s.name
                ));
            }
        }
        out
    }
}

/// A request that gives up after `limit`.
trait OrTimeout: std::future::Future<Output = Result<Value, McpError>> + Sized {
    async fn or_timeout(self, limit: std::time::Duration) -> Result<Value, McpError> {
        smol::future::or(self, async {
            smol::Timer::after(limit).await;
            Err(McpError::CallTimeout(limit))
        })
        .await
    }
}

impl<F: std::future::Future<Output = Result<Value, McpError>>> OrTimeout for F {}

#[cfg(test)]
mod tests {
    use super::*;

    fn greet() -> Prompt {
        Prompt {
            name: "greet".into(),
            description: "say hello".into(),
            arguments: vec![("name".into(), true), ("tone".into(), false)],
        }
    }

    #[test]
    fn arguments_follow_the_declared_order_and_the_last_takes_the_rest() {
        let p = greet();
        assert_eq!(arguments(&p, "Ada").unwrap().to_json(), r#"{"name":"Ada"}"#);
        assert_eq!(
            arguments(&p, "\"Ada Lovelace\" very warm")
                .unwrap()
                .to_json(),
            r#"{"name":"Ada Lovelace","tone":"very warm"}"#
        );
        assert!(arguments(&p, "  ").unwrap_err().contains("<name> [tone]"));
        let none = Prompt {
            arguments: vec![],
            ..greet()
        };
        assert!(arguments(&none, "x").is_err());
        assert_eq!(arguments(&none, "").unwrap().to_json(), "{}");
    }

    #[test]
    fn mentions_need_a_server_and_a_uri() {
        assert_eq!(
            mentions("read @notes:notes://today, and @s:memo://one. mail a@b:c://d @x @y:plain"),
            vec![
                ("notes".to_string(), "notes://today".to_string()),
                ("s".to_string(), "memo://one".to_string())
            ]
        );
        assert!(mentions("@").is_empty() && mentions("@:x://y").is_empty());
    }
}
