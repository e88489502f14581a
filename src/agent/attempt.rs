//! One turn's request: streamed, retried while it has produced nothing,
//! and ended by what the stream or the user did.
//!
//! The loop (`agent/mod.rs`) decides what a turn's answer means; this
//! module only gets the answer: it opens the stream, parses it (a chat
//! completions stream becomes Messages API events), starts tools as their
//! blocks close, and waits out retries. The loop sees [`Agent::attempts`]
//! and how it ended, an [`AttemptEnd`].

use std::rc::Rc;
use std::time::Instant;

use smol::future::FutureExt;

use super::executor::StreamingExecutor;
use super::{Agent, Event, Outcome, news};
use crate::model::sse::{Flow, SseParser};
use crate::model::stream::{Assembler, Block, StreamError, Update};
use crate::model::{ApiError, Detail};

/// How one streamed attempt ended.
pub(super) enum AttemptEnd {
    Done,
    Failed(ApiError),
    Aborted,
}

impl<'ex> Agent<'ex> {
    /// Streams one turn, retrying failed attempts that produced nothing.
    pub(super) async fn attempts(
        &mut self,
        body: &str,
        mut exec: Option<&mut StreamingExecutor<'ex>>,
        can_fall_back: bool,
        outcome: &mut Outcome,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> (Assembler, AttemptEnd) {
        let mut retry = 0u32;
        let mut overloaded = 0u32;
        let first_attempt = Instant::now();
        loop {
            let mut asm = Assembler::new();
            let began = Instant::now();
            let mut first_event = None;
            let end = self
                .attempt(body, &mut asm, exec.as_deref_mut(), &mut first_event, sink)
                .await;
            outcome.api_duration += began.elapsed();
            if outcome.ttft.is_none() {
                outcome.ttft = first_event.map(|at: Instant| at - began);
            }
            let error = match end {
                AttemptEnd::Failed(e) => e,
                other => return (asm, other),
            };
            let max = self.settings.retry.max_retries;
            if asm.has_blocks() || !error.is_retryable() || retry >= max {
                return (asm, AttemptEnd::Failed(error));
            }
            // An overloaded model gets a few tries, then its fallback
            // serves the turn rather than the whole retry budget going by.
            if error.wants_fallback() {
                overloaded += 1;
                if can_fall_back && overloaded >= self.settings.fallback_after.max(1) {
                    return (asm, AttemptEnd::Failed(error));
                }
            }
            let delay = self.settings.retry.delay(retry + 1, &error);
            if first_attempt.elapsed() + delay > self.settings.retry.max_elapsed {
                let waited = first_attempt.elapsed().as_secs();
                return (
                    asm,
                    AttemptEnd::Failed(ApiError::Transport(Detail::caused_by(
                        format!(
                            "{error} (gave up after {retry} retries in {waited}s; TERN_RETRY_MAX_SECS sets the limit)"
                        ),
                        error,
                    ))),
                );
            }
            retry += 1;
            sink(Event::Retrying {
                attempt: retry,
                max_retries: max,
                delay,
                error: &error,
            });
            let abort = self.abort.clone();
            let slept = async {
                smol::Timer::after(delay).await;
                true
            }
            .or(async {
                abort.wait().await;
                false
            })
            .await;
            if !slept {
                return (asm, AttemptEnd::Aborted);
            }
        }
    }

    /// One HTTP attempt: open the stream, parse it, start tools as their
    /// blocks close, and keep the executor moving in between.
    async fn attempt(
        &self,
        body: &str,
        asm: &mut Assembler,
        mut exec: Option<&mut StreamingExecutor<'ex>>,
        first_event: &mut Option<Instant>,
        sink: &mut dyn FnMut(Event<'_>),
    ) -> AttemptEnd {
        let abort = self.abort.clone();
        let betas = self.settings.thinking.betas(&self.settings.model);
        let opened = async { Some(self.client.open(body.to_string(), &betas).await) }
            .or(async {
                abort.wait().await;
                None
            })
            .await;
        let mut stream = match opened {
            None => return AttemptEnd::Aborted,
            Some(Err(e)) => return AttemptEnd::Failed(e),
            Some(Ok(s)) => s,
        };
        let mut parser = SseParser::default();
        // Chat completion chunks are translated into Messages API events.
        let mut translator = (self.client.provider() == crate::model::Provider::OpenAi)
            .then(crate::model::openai::Translator::default);
        let mut buf = vec![0u8; 16 * 1024];
        let relay = self.relay();
        let reports = Rc::clone(self.pipeline.reports());
        loop {
            enum Step {
                Chunk(Result<usize, ApiError>),
                ToolDone,
                Relay,
                Abort,
            }
            let step = async { Step::Chunk(stream.next_chunk(&mut buf).await) }
                .or(async {
                    match exec.as_deref_mut() {
                        Some(e) => e.next_done().await,
                        // Without an executor (a compaction request) tool
                        // calls are ignored, never run.
                        None => smol::future::pending::<()>().await,
                    }
                    Step::ToolDone
                })
                .or(async {
                    news(relay.as_deref(), &reports).await;
                    Step::Relay
                })
                .or(async {
                    abort.wait().await;
                    Step::Abort
                })
                .await;
            let n = match step {
                Step::ToolDone => continue,
                Step::Relay => {
                    self.drain(sink);
                    continue;
                }
                Step::Abort => return AttemptEnd::Aborted,
                Step::Chunk(Err(e)) => return AttemptEnd::Failed(e),
                Step::Chunk(Ok(0)) => {
                    let detail = if parser.is_idle() {
                        "the response ended before message_stop"
                    } else {
                        "the response was cut off in the middle of an event"
                    };
                    return AttemptEnd::Failed(ApiError::Stream(detail.into()));
                }
                Step::Chunk(Ok(n)) => {
                    first_event.get_or_insert_with(Instant::now);
                    n
                }
            };
            let mut failure: Option<ApiError> = None;
            let mut handle = |event: &str, data: &str| -> Flow {
                sink(Event::Stream(data));
                match asm.feed(event, data) {
                    Ok(Update::TextDelta(t)) => sink(Event::TextDelta(t)),
                    Ok(Update::BlockDone(Block::Other(block)))
                        if block.str_field("type") == Some("thinking") =>
                    {
                        sink(Event::Thinking(
                            block.str_field("thinking").unwrap_or_default(),
                        ));
                    }
                    Ok(Update::BlockDone(Block::ToolUse(call))) => {
                        if let Some(e) = exec.as_deref_mut() {
                            e.add(call);
                        }
                    }
                    Ok(Update::MessageDone) => return Flow::Stop,
                    Ok(_) => {}
                    Err(StreamError::Api { kind, message }) => {
                        failure = Some(ApiError::InStream { kind, message });
                        return Flow::Stop;
                    }
                    Err(StreamError::Protocol(m)) => {
                        failure = Some(ApiError::Stream(m.into()));
                        return Flow::Stop;
                    }
                }
                Flow::Continue
            };
            let fed = parser.feed(&buf[..n], &mut |ev| match translator.as_mut() {
                None => handle(ev.event, ev.data),
                Some(t) => {
                    for (event, data) in t.translate(ev.data) {
                        if handle(event, &data) == Flow::Stop {
                            return Flow::Stop;
                        }
                    }
                    Flow::Continue
                }
            });
            if let Err(e) = fed {
                return AttemptEnd::Failed(ApiError::Stream(Detail::caused_by(e.to_string(), e)));
            }
            if let Some(e) = failure {
                return AttemptEnd::Failed(e);
            }
            if asm.is_done() {
                return AttemptEnd::Done;
            }
        }
    }
}
