//! The OpenAI-compatible backend: the utterance as one WAV, posted as
//! `multipart/form-data` to `…/v1/audio/transcriptions` (whisper.cpp's
//! server, faster-whisper servers, vLLM, OpenAI itself).

use std::io::Read;
use std::time::Duration;

use super::{Config, Control, Error, Event, Recording, server_words, wav};
use crate::json::Value;

/// Attempts for a server that is not there yet or answers 5xx: the
/// utterance is kept, so a retry costs only time.
const ATTEMPTS: u32 = 3;

/// The transcription URL: a base URL gets the standard path.
pub fn url_of(endpoint: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    if e.ends_with("/audio/transcriptions") {
        e.to_string()
    } else if e.ends_with("/v1") {
        format!("{e}/audio/transcriptions")
    } else {
        format!("{e}/v1/audio/transcriptions")
    }
}

pub(super) fn run(
    config: &Config,
    endpoint: &str,
    rec: &mut Recording,
    ctl: &Control,
    emit: &dyn Fn(Event),
) {
    use std::sync::atomic::Ordering;
    while rec.stopped.is_none() {
        if ctl.cancel.load(Ordering::Relaxed) {
            return;
        }
        rec.take(ctl, Duration::from_millis(20), emit);
    }
    if ctl.cancel.load(Ordering::Relaxed) {
        return;
    }
    if !rec.heard() {
        emit(Event::Failed(rec.failed.take().unwrap_or(Error::NoSpeech)));
        return;
    }
    emit(Event::Transcribing);
    rec.save(config, emit);
    let body = wav::encode(&rec.all);
    let mut last = Error::NoText;
    for attempt in 1..=ATTEMPTS {
        if ctl.cancel.load(Ordering::Relaxed) {
            return;
        }
        match post(config, endpoint, &body) {
            Ok(text) => {
                let text = super::clean(&text);
                emit(if text.is_empty() {
                    Event::Failed(Error::NoText)
                } else {
                    Event::Final(text, rec.since_stop())
                });
                return;
            }
            Err((e, retry)) => {
                last = e;
                if !retry || attempt == ATTEMPTS {
                    break;
                }
                emit(Event::Note(format!("{last}; trying again")));
                std::thread::sleep(Duration::from_millis(300 * u64::from(attempt)));
            }
        }
    }
    emit(Event::Failed(last));
}

/// One request: the text, or the error and whether trying again may help.
fn post(config: &Config, endpoint: &str, wav: &[u8]) -> Result<String, (Error, bool)> {
    let url = url_of(endpoint);
    let boundary = format!("tern-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    let mut body = Vec::with_capacity(wav.len() + 1024);
    let mut field = |name: &str, value: &str| {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    };
    field("model", config.model.as_deref().unwrap_or("whisper-1"));
    if let Some(l) = &config.language {
        field("language", l);
    }
    field("response_format", "json");
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"speech.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(wav);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());

    let agent = crate::model::client::http_config(config.extra_ca_pem.as_deref())
        .map_err(|e| (Error::Server(e.to_string()), false))?
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .new_agent();
    let mut req = agent.post(&url).header(
        "content-type",
        &format!("multipart/form-data; boundary={boundary}"),
    );
    if let Some(k) = &config.key {
        req = req.header("authorization", &format!("Bearer {k}"));
    }
    let response = req.send(&body[..]).map_err(|e| match e {
        ureq::Error::Io(io) => (Error::Unreachable(format!("{url}: {io}")), true),
        ureq::Error::Timeout(_) => (Error::Unreachable(format!("{url}: timed out")), true),
        ureq::Error::HostNotFound => (Error::Unreachable(format!("{url}: host not found")), false),
        ureq::Error::ConnectionFailed => (
            Error::Unreachable(format!("{url}: connection failed")),
            true,
        ),
        other => (Error::Server(format!("{url}: {other}")), false),
    })?;
    let status = response.status().as_u16();
    let mut text = String::new();
    response
        .into_body()
        .into_reader()
        .take(1024 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| (Error::Server(format!("the answer broke off: {e}")), true))?;
    match status {
        200..=299 => Ok(match crate::json::parse(&text) {
            Ok(v) => v
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            // response_format=text servers.
            Err(_) => text,
        }),
        401 | 403 => Err((
            Error::Auth(format!("HTTP {status}: {}", server_words(&text))),
            false,
        )),
        415 => Err((Error::Format(server_words(&text)), false)),
        400 if text.to_ascii_lowercase().contains("format") => {
            Err((Error::Format(server_words(&text)), false))
        }
        500..=599 => Err((
            Error::Server(format!("HTTP {status}: {}", server_words(&text))),
            true,
        )),
        _ => Err((
            Error::Server(format!("HTTP {status}: {}", server_words(&text))),
            false,
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base_urls_get_the_standard_path() {
        use super::url_of;
        assert_eq!(url_of("http://h:1"), "http://h:1/v1/audio/transcriptions");
        assert_eq!(
            url_of("http://h:1/v1/"),
            "http://h:1/v1/audio/transcriptions"
        );
        assert_eq!(
            url_of("http://h:1/x/v1/audio/transcriptions"),
            "http://h:1/x/v1/audio/transcriptions"
        );
    }
}
