//! What servers ask of tern: `elicitation/create` (a form for the person)
//! and `sampling/createMessage` (a completion from the session's model).
//!
//! A server is untrusted: what it sends is checked before anyone sees it,
//! a person (or a rule) decides, and nothing of the conversation goes to
//! it. Sampling spends the session's money, so it needs a yes each time
//! (or "for this session", or an `McpSampling(<server>)` allow rule), is
//! capped in tokens and in number per server, and is counted in the
//! session's cost and budget like any other model use.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::elicit::{Elicited, Form};
use crate::json::{Map, Value};
use crate::model::once::SideModel;
use crate::obj;
use crate::policy::{Behavior, Rule};
use crate::report::{Level, notice};
use crate::tools::{LocalFuture, Spend};

/// Who answers servers' questions: the TUI, line mode, an SDK host, or
/// a standing choice made by the user (`TERN_MCP_ELICITATION`).
pub trait Asker {
    /// The person's answer to a server's form.
    fn elicit<'a>(&'a self, server: &'a str, form: &'a Form) -> LocalFuture<'a, Elicited>;
    /// Whether `server` may have the model answer `request` (shown as
    /// `question`).
    fn allow_sampling<'a>(
        &'a self,
        server: &'a str,
        question: &'a str,
        request: &'a Value,
    ) -> LocalFuture<'a, Grant>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    No,
    Once,
    /// Yes, and for this server's later requests in this session.
    Session,
}

/// The model sampling requests go to, and where what they cost is
/// written down for the session's total and budget.
pub struct Sampler {
    pub model: SideModel,
    pub spend: Rc<Spend>,
    /// The session's own output limit: a server gets no more.
    pub max_tokens: u32,
    /// `--max-budget-usd`: once the run has spent it, no more requests.
    pub budget: Option<f64>,
}

/// What tern tells servers it can do, decided once for the session:
/// elicitation only where someone (or a standing choice) answers,
/// sampling only where someone or a rule can allow it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offer {
    pub elicitation: bool,
    pub sampling: bool,
}

impl Offer {
    /// The `capabilities` of `initialize`.
    pub fn capabilities(self) -> Value {
        let mut caps = Map::new();
        caps.insert("roots", obj! { "listChanged" => false });
        if self.elicitation {
            // `{}` is form mode in both 2025-06-18 and 2025-11-25.
            caps.insert("elicitation", obj! {});
        }
        if self.sampling {
            caps.insert("sampling", obj! {});
        }
        Value::Object(caps)
    }

    /// "elicitation, sampling", or "none".
    pub fn words(self) -> String {
        let mut w = Vec::new();
        if self.elicitation {
            w.push("elicitation");
        }
        if self.sampling {
            w.push("sampling");
        }
        if w.is_empty() {
            "none".into()
        } else {
            w.join(", ")
        }
    }
}

/// Requests one server may make in a session: a server that loops stops
/// getting answers, whatever was granted.
const MAX_SAMPLES: u32 = 25;
const MAX_FORMS: u32 = 50;

#[derive(Default)]
pub struct Services {
    pub offer: Offer,
    asker: RefCell<Option<Rc<dyn Asker>>>,
    sampler: RefCell<Option<Rc<Sampler>>>,
    /// `McpSampling` rules: the tool part, then the server they name.
    rules: RefCell<Vec<Rule>>,
    /// Servers granted sampling for the session.
    granted: RefCell<Vec<String>>,
    /// Requests each server made: (forms, samples).
    counts: RefCell<HashMap<String, (u32, u32)>>,
    /// One sampling request at a time: each sees what the one before it
    /// cost before the budget is checked, so requests sent all at once
    /// cannot pass the check together.
    sampling: smol::lock::Mutex<()>,
}

/// The rule tool name for sampling: `McpSampling(<server>)`, or all.
pub const SAMPLING_RULE: &str = "McpSampling";

impl Services {
    pub fn new(offer: Offer) -> Services {
        Services {
            offer,
            ..Services::default()
        }
    }

    pub fn set_asker(&self, asker: Option<Rc<dyn Asker>>) {
        *self.asker.borrow_mut() = asker;
    }

    pub fn set_sampler(&self, sampler: Sampler, rules: &[Rule]) {
        *self.sampler.borrow_mut() = Some(Rc::new(sampler));
        *self.rules.borrow_mut() = rules
            .iter()
            .filter(|r| r.tool == SAMPLING_RULE)
            .cloned()
            .collect();
    }

    fn count(&self, server: &str, sample: bool) -> u32 {
        let mut counts = self.counts.borrow_mut();
        let c = counts.entry(server.to_string()).or_default();
        let n = if sample { &mut c.1 } else { &mut c.0 };
        *n += 1;
        *n
    }

    /// The answer to one request from `server`.
    pub async fn answer(
        &self,
        server: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, (i64, String)> {
        match method {
            "elicitation/create" => self.elicit(server, &params).await.map(|e| e.to_result()),
            "sampling/createMessage" if self.offer.sampling => self.sample(server, &params).await,
            "sampling/createMessage" => {
                notice(
                    Level::Warning,
                    format!(
                        "MCP server {server} sent {method}, which tern did not offer it; refused"
                    ),
                );
                Err((-32601, format!("this client did not offer {method}")))
            }
            other => Err((-32601, format!("tern does not offer {other}"))),
        }
    }

    async fn elicit(&self, server: &str, params: &Value) -> Result<Elicited, (i64, String)> {
        let form = Form::parse(params).map_err(|why| {
            notice(
                Level::Warning,
                format!("MCP server {server} asked for input with a form tern cannot show: {why}"),
            );
            (-32602, format!("invalid elicitation request: {why}"))
        })?;
        if self.count(server, false) > MAX_FORMS {
            return Err((
                -32603,
                format!("too many elicitation requests in this session (at most {MAX_FORMS})"),
            ));
        }
        // Not offered (nobody answers here), or nobody set up yet:
        // declined, and the person told.
        let asker = self
            .asker
            .borrow()
            .clone()
            .filter(|_| self.offer.elicitation);
        let Some(asker) = asker else {
            notice(
                Level::Warning,
                format!(
                    "MCP server {server} asked for input ({}); nobody can answer here, so it was declined",
                    one_line(&form.message)
                ),
            );
            return Ok(Elicited::Decline);
        };
        match asker.elicit(server, &form).await {
            Elicited::Accept(given) => match form.complete(&given) {
                Ok(content) => Ok(Elicited::Accept(content)),
                // Whoever answered gave values the form does not take
                // (an SDK host): the server never sees them.
                Err(why) => {
                    notice(
                        Level::Warning,
                        format!(
                            "the answer to MCP server {server}'s form was not valid ({why}); declined"
                        ),
                    );
                    Ok(Elicited::Decline)
                }
            },
            other => Ok(other),
        }
    }

    async fn sample(&self, server: &str, params: &Value) -> Result<Value, (i64, String)> {
        let sampler = self.sampler.borrow().clone();
        let Some(sampler) = sampler else {
            return Err((-1, "no model is available for sampling".into()));
        };
        let request = Request::parse(params, sampler.max_tokens).map_err(|why| {
            notice(
                Level::Warning,
                format!("MCP server {server} sent a sampling request tern refused: {why}"),
            );
            (-32602, format!("invalid sampling request: {why}"))
        })?;
        if self.count(server, true) > MAX_SAMPLES {
            notice(
                Level::Warning,
                format!(
                    "MCP server {server} asked for more than {MAX_SAMPLES} completions; refused"
                ),
            );
            return Err((
                -1,
                format!("too many sampling requests in this session (at most {MAX_SAMPLES})"),
            ));
        }
        let _one_at_a_time = self.sampling.lock().await;
        if let Some(budget) = sampler.budget
            && sampler.spend.so_far() >= budget
        {
            notice(
                Level::Warning,
                format!(
                    "MCP server {server} asked to use the model, but the budget (--max-budget-usd {budget}) is spent; refused"
                ),
            );
            return Err((-1, "the session's budget is spent".into()));
        }
        let question = format!(
            "MCP server {server} asks the model ({}) to answer a request of its own, up to {} tokens, paid from this session",
            sampler.model.model, request.max_tokens
        );
        if !self.may_sample(server, &question, params).await {
            return Err((-1, "the user declined the sampling request".into()));
        }
        let parts = crate::model::request::RequestParts {
            model: &sampler.model.model,
            max_tokens: request.max_tokens,
            system: &request.system,
            tools: &[],
            messages: &request.messages,
            thinking: Default::default(),
        };
        let answer = crate::model::once::complete(&sampler.model.client, &parts)
            .await
            .map_err(|e| (-32603, format!("the model request failed: {e}")))?;
        let cost = crate::model::price::cost(&sampler.model.model, &answer.usage);
        sampler
            .spend
            .record(&sampler.model.model, &answer.usage, cost);
        let stop = if answer.usage.output_tokens >= u64::from(request.max_tokens) {
            "maxTokens"
        } else {
            "endTurn"
        };
        Ok(obj! {
            "role" => "assistant",
            "content" => obj! { "type" => "text", "text" => answer.text },
            "model" => sampler.model.model.as_str(),
            "stopReason" => stop,
        })
    }

    /// Rules first (deny wins), then a grant for the session, then the
    /// person; with nobody to ask, no.
    async fn may_sample(&self, server: &str, question: &str, params: &Value) -> bool {
        let names = |r: &Rule| r.spec.as_deref().is_none_or(|s| s == server);
        let rules = self.rules.borrow().clone();
        let says = |b: Behavior| rules.iter().any(|r| r.behavior == b && names(r));
        if says(Behavior::Deny) {
            notice(
                Level::Info,
                format!("MCP server {server}'s sampling request was refused by a deny rule"),
            );
            return false;
        }
        if says(Behavior::Allow) || self.granted.borrow().iter().any(|s| s == server) {
            return true;
        }
        let asker = self.asker.borrow().clone();
        let Some(asker) = asker else {
            notice(
                Level::Warning,
                format!(
                    "MCP server {server} asked to use the model; nobody can allow it here, so it was refused (an allow rule {SAMPLING_RULE}({server}) permits it)"
                ),
            );
            return false;
        };
        match asker.allow_sampling(server, question, params).await {
            Grant::No => false,
            Grant::Once => true,
            Grant::Session => {
                self.granted.borrow_mut().push(server.to_string());
                true
            }
        }
    }
}

/// A sampling request, mapped to the model's wire.
struct Request {
    system: Vec<String>,
    messages: Vec<Value>,
    max_tokens: u32,
}

impl Request {
    fn parse(params: &Value, cap: u32) -> Result<Request, String> {
        let list = params
            .get("messages")
            .and_then(Value::as_array)
            .filter(|m| !m.is_empty())
            .ok_or("messages must be a non-empty array")?;
        let mut messages = Vec::new();
        for m in list {
            let role = match m.str_field("role") {
                Some(r @ ("user" | "assistant")) => r,
                _ => return Err("each message needs role user or assistant".into()),
            };
            let content = match m.get("content") {
                Some(Value::Array(items)) => items.iter().map(block).collect::<Result<_, _>>()?,
                Some(one) => vec![block(one)?],
                None => return Err("a message has no content".into()),
            };
            messages.push(obj! { "role" => role, "content" => Value::Array(content) });
        }
        let max = params
            .get("maxTokens")
            .and_then(Value::as_i64)
            .filter(|&n| n > 0)
            .ok_or("maxTokens must be a positive number")?;
        Ok(Request {
            system: params
                .str_field("systemPrompt")
                .filter(|s| !s.trim().is_empty())
                .map(|s| vec![s.to_string()])
                .unwrap_or_default(),
            messages,
            max_tokens: u32::try_from(max).unwrap_or(u32::MAX).min(cap),
        })
    }
}

/// One content block of a sampling message: text or an image.
fn block(c: &Value) -> Result<Value, String> {
    match c.str_field("type") {
        Some("text") => {
            Ok(obj! { "type" => "text", "text" => c.str_field("text").unwrap_or_default() })
        }
        Some("image") => Ok(obj! {
            "type" => "image",
            "source" => obj! {
                "type" => "base64",
                "media_type" => c.str_field("mimeType").unwrap_or("image/png"),
                "data" => c.str_field("data").unwrap_or_default(),
            },
        }),
        Some(other) => Err(format!("content of type {other:?} is not supported")),
        None => Err("a content block has no type".into()),
    }
}

/// Text cut to one short line, without control characters.
pub fn one_line(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = flat.trim().chars().take(200).collect();
    if flat.trim().chars().count() > 200 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn sampling_requests_map_to_the_wire_and_are_capped() {
        let p = parse(
            r#"{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"systemPrompt":"be brief","maxTokens":100000}"#,
        )
        .unwrap();
        let r = Request::parse(&p, 4096).unwrap();
        assert_eq!(r.max_tokens, 4096);
        assert_eq!(r.system, ["be brief"]);
        assert_eq!(
            r.messages[0].to_json(),
            r#"{"role":"user","content":[{"type":"text","text":"hi"}]}"#
        );
        let bad = parse(r#"{"messages":[{"role":"system","content":{"type":"text","text":"x"}}],"maxTokens":5}"#).unwrap();
        assert!(Request::parse(&bad, 10).is_err());
    }

    #[test]
    fn capabilities_offer_only_what_is_answered() {
        let none = Offer::default().capabilities();
        assert!(none.get("elicitation").is_none() && none.get("sampling").is_none());
        let both = Offer {
            elicitation: true,
            sampling: true,
        };
        assert_eq!(
            both.capabilities().to_json(),
            r#"{"roots":{"listChanged":false},"elicitation":{},"sampling":{}}"#
        );
    }
}
