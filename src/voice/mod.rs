//! Voice input (feature `voice`): speech becomes composer text, never a
//! message by itself. A recorder (or a WAV file) feeds an end-of-speech
//! detector and a speech-to-text backend: an OpenAI-compatible
//! `/v1/audio/transcriptions` endpoint given the utterance as one WAV, or
//! a streaming WebSocket (`linear16`, 16 kHz, mono; interim and final
//! results; KeepAlive) for text while speaking. The frontend shows what
//! [`Listening`] reports and puts the final text in the composer, where
//! the person edits and sends it.
//!
//! Audio goes only to the configured endpoint, which only trusted
//! settings layers and the environment may set (a repository's settings
//! could otherwise send the microphone anywhere, or name a recorder that
//! is any program); nothing is written to disk unless `voice.saveAudioDir`
//! asks.

mod capture;
mod http;
pub(crate) mod stream;
pub(crate) mod vad;
pub(crate) mod wav;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use capture::{Capture, Captured};
pub use capture::{Source, recorder};

/// What the harness shows of voice (tests and the benchmark drive it).
pub mod face {
    pub use super::stream::{FRAME_BYTES, RECONNECTS};
    pub use super::wav::{decode as decode_wav, encode as encode_wav};
    pub use super::{Backend, Config, Error, Event, Listening, Source, start};
}

use crate::json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// OpenAI-compatible `POST …/audio/transcriptions`.
    Http,
    /// A streaming WebSocket.
    WebSocket,
}

#[derive(Clone)]
pub struct Config {
    pub backend: Backend,
    /// Unset: voice is not configured.
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub language: Option<String>,
    /// Sent as a bearer token (HTTP) or `Token` (WebSocket); never shown.
    pub key: Option<String>,
    /// Where the key came from (a variable's name), for `tern doctor`.
    pub key_source: Option<String>,
    pub source: Source,
    /// A pause this long after speech ends the utterance.
    pub silence: Duration,
    /// The least level that counts as voice, dBFS.
    pub floor_db: f32,
    /// The longest utterance.
    pub max: Duration,
    /// With no speech heard for this long, listening gives up.
    pub wait_for_speech: Duration,
    /// Each utterance is also written here as a WAV, when set.
    pub save_dir: Option<PathBuf>,
    /// PATH, to find the recorder.
    pub path: Option<std::ffi::OsString>,
    pub extra_ca_pem: Option<Vec<u8>>,
}

// The key stays out of every debug print.
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("backend", &self.backend)
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("language", &self.language)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("source", &self.source)
            .field("silence", &self.silence)
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            backend: Backend::Http,
            endpoint: None,
            model: None,
            language: None,
            key: None,
            key_source: None,
            source: Source::Command(None),
            silence: Duration::from_millis(1200),
            floor_db: -45.0,
            max: Duration::from_secs(120),
            wait_for_speech: Duration::from_secs(10),
            save_dir: None,
            path: None,
            extra_ca_pem: None,
        }
    }
}

impl Config {
    /// The merged `voice` setting (trusted layers only) and the
    /// environment. Problems are warnings; what is wrong is left unset.
    pub fn new(
        setting: Option<&Value>,
        env: impl Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> Config {
        let mut c = Config::default();
        let v = setting.cloned().unwrap_or(Value::Null);
        let text = |key: &str, var: &str| {
            env(var)
                .filter(|s| !s.trim().is_empty())
                .or_else(|| v.get(key).and_then(Value::as_str).map(str::to_string))
        };
        c.endpoint = text("endpoint", "TERN_VOICE_ENDPOINT");
        c.model = text("model", "TERN_VOICE_MODEL");
        c.language = text("language", "TERN_VOICE_LANGUAGE");
        let key_var = v
            .get("apiKeyEnv")
            .and_then(Value::as_str)
            .unwrap_or("TERN_VOICE_KEY")
            .to_string();
        c.key = env(&key_var).filter(|k| !k.is_empty());
        c.key_source = c.key.as_ref().map(|_| key_var.clone());
        c.backend = match c.endpoint.as_deref() {
            Some(e) if e.starts_with("ws://") || e.starts_with("wss://") => Backend::WebSocket,
            _ => Backend::Http,
        };
        match text("backend", "TERN_VOICE_BACKEND").as_deref() {
            None => {}
            Some("http" | "openai") => c.backend = Backend::Http,
            Some("websocket" | "ws" | "stream") => c.backend = Backend::WebSocket,
            Some(other) => warnings.push(format!(
                "voice.backend '{other}' is not 'http' or 'websocket'; ignored"
            )),
        }
        if let Some(r) = v.get("recorder") {
            let list = r.as_array().map_or(&[][..], Vec::as_slice);
            let argv: Vec<String> = list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            if argv.len() == list.len() && !argv.is_empty() {
                c.source = Source::Command(Some(argv));
            } else {
                warnings
                    .push("voice.recorder must be a list of strings (the argv); ignored".into());
            }
        }
        match env("TERN_VOICE_SOURCE").as_deref() {
            None | Some("" | "mic") => {}
            Some(s) => match s.strip_prefix("file:") {
                Some(p) => c.source = Source::File(PathBuf::from(p)),
                None => warnings.push(format!(
                    "TERN_VOICE_SOURCE '{s}' is not 'mic' or 'file:PATH'; ignored"
                )),
            },
        }
        let number = |key: &str, var: &str, warnings: &mut Vec<String>| -> Option<f64> {
            let raw = env(var)
                .map(Value::String)
                .or_else(|| v.get(key).cloned())?;
            let n = match &raw {
                Value::String(s) => s.trim().parse::<f64>().ok(),
                other => other.as_f64(),
            };
            if n.is_none_or(|n| !n.is_finite()) {
                warnings.push(format!("voice.{key} is not a number; ignored"));
            }
            n.filter(|n| n.is_finite())
        };
        if let Some(ms) = number("silenceMs", "TERN_VOICE_SILENCE_MS", warnings) {
            c.silence = Duration::from_millis(ms.clamp(200.0, 10_000.0) as u64);
        }
        if let Some(db) = number("thresholdDb", "TERN_VOICE_THRESHOLD_DB", warnings) {
            c.floor_db = db.clamp(-90.0, 0.0) as f32;
        }
        if let Some(s) = number("maxSeconds", "TERN_VOICE_MAX_SECONDS", warnings) {
            c.max = Duration::from_secs_f64(s.clamp(1.0, 600.0));
        }
        if let Some(d) = v.get("saveAudioDir").and_then(Value::as_str) {
            c.save_dir = Some(PathBuf::from(d));
        }
        c.path = env("PATH").map(std::ffi::OsString::from);
        c
    }
}

/// Why voice gave no text. Each cause has its own words: the fix differs.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    NotConfigured,
    NoRecorder(String),
    NoDevice(String),
    Permission(String),
    /// Nothing over the threshold was heard.
    NoSpeech,
    /// Speech was sent, and the server returned no text for it.
    NoText,
    /// The audio is in a form that cannot be used (a file, or the server says so).
    Format(String),
    /// The server could not be reached (after the retries).
    Unreachable(String),
    /// The server refused the credentials.
    Auth(String),
    /// The server failed.
    Server(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotConfigured => write!(
                f,
                "voice is not set up: set TERN_VOICE_ENDPOINT (or voice.endpoint in your user settings) to a speech-to-text server"
            ),
            Error::NoRecorder(m) => write!(f, "no recorder: {m}"),
            Error::NoDevice(m) => write!(f, "no microphone: {m}"),
            Error::Permission(m) => write!(f, "no permission for the microphone: {m}"),
            Error::NoSpeech => write!(f, "no speech heard (nothing above the threshold)"),
            Error::NoText => write!(f, "the speech server returned no text for what was said"),
            Error::Format(m) => write!(f, "unsupported audio format: {m}"),
            Error::Unreachable(m) => write!(f, "the speech server cannot be reached: {m}"),
            Error::Auth(m) => write!(f, "the speech server refused the key: {m}"),
            Error::Server(m) => write!(f, "the speech server failed: {m}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Recording from this source.
    Listening(String),
    /// Speech was heard.
    Speech,
    /// Text so far, not final.
    Interim(String),
    /// Recording stopped; the text is being made.
    Transcribing,
    /// Worth telling (a retry, a replay, salvaged text).
    Note(String),
    /// The transcript, and how long it took from the end of recording.
    Final(String, Duration),
    Failed(Error),
}

#[derive(Default)]
struct Control {
    stop: AtomicBool,
    cancel: AtomicBool,
}

/// One utterance being heard. Dropping it cancels.
pub struct Listening {
    events: smol::channel::Receiver<Event>,
    control: Arc<Control>,
}

impl Listening {
    /// Stop recording and make the text of what was heard.
    pub fn stop(&self) {
        self.control.stop.store(true, Ordering::Relaxed);
    }

    /// Give up: no text, the recorder ends.
    pub fn cancel(&self) {
        self.control.cancel.store(true, Ordering::Relaxed);
    }

    /// The next event; `None` after `Final` or `Failed`.
    pub async fn next(&self) -> Option<Event> {
        self.events.recv().await.ok()
    }

    pub fn next_blocking(&self) -> Option<Event> {
        self.events.recv_blocking().ok()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Starts listening on a thread of its own.
pub fn start(config: Config) -> Listening {
    let (tx, rx) = smol::channel::unbounded();
    let control = Arc::new(Control::default());
    let ctl = Arc::clone(&control);
    std::thread::spawn(move || {
        let emit = |e: Event| {
            let _ = tx.send_blocking(e);
        };
        run(&config, &ctl, &emit);
    });
    Listening {
        events: rx,
        control,
    }
}

fn run(config: &Config, ctl: &Control, emit: &dyn Fn(Event)) {
    let Some(endpoint) = config.endpoint.clone() else {
        emit(Event::Failed(Error::NotConfigured));
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let capture = match capture::start(&config.source, config.path.as_deref(), tx) {
        Ok(c) => c,
        Err(e) => {
            emit(Event::Failed(e));
            return;
        }
    };
    emit(Event::Listening(capture.name.clone()));
    let mut rec = Recording {
        detector: vad::Detector::new(config.floor_db, config.silence),
        all: Vec::new(),
        began: Instant::now(),
        stopped: None,
        failed: None,
        said_speech: false,
        capture,
        rx,
        max: config.max,
        wait_for_speech: config.wait_for_speech,
    };
    match config.backend {
        Backend::Http => http::run(config, &endpoint, &mut rec, ctl, emit),
        Backend::WebSocket => stream::run(config, &endpoint, &mut rec, ctl, emit),
    }
    rec.capture.stop();
}

/// The recording side of a session: the source, the detector, and every
/// sample heard (the HTTP backend sends them; the stream replays them).
struct Recording {
    detector: vad::Detector,
    all: Vec<i16>,
    began: Instant,
    /// When recording stopped (key, pause, end of source, time).
    stopped: Option<Instant>,
    /// The source failed before it gave any audio.
    failed: Option<Error>,
    said_speech: bool,
    capture: Capture,
    rx: Receiver<Captured>,
    max: Duration,
    wait_for_speech: Duration,
}

impl Recording {
    /// New samples, waiting at most `wait` for them. Sets `stopped` when
    /// recording ends for any reason.
    fn take(&mut self, ctl: &Control, wait: Duration, emit: &dyn Fn(Event)) -> Vec<i16> {
        let mut out = Vec::new();
        if self.stopped.is_some() {
            return out;
        }
        let mut first = true;
        loop {
            let got = if first {
                first = false;
                self.rx.recv_timeout(wait)
            } else {
                self.rx.try_recv().map_err(|_| RecvTimeoutError::Timeout)
            };
            match got {
                Ok(Captured::Audio(samples)) => {
                    if self.detector.feed(&samples) {
                        self.stop();
                    }
                    self.all.extend_from_slice(&samples);
                    out.extend(samples);
                    if self.stopped.is_some() {
                        break;
                    }
                }
                Ok(Captured::Ended(why)) => {
                    self.failed = why;
                    self.stop();
                    break;
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    self.stop();
                    break;
                }
            }
        }
        if self.detector.heard() && !self.said_speech {
            self.said_speech = true;
            emit(Event::Speech);
        }
        let long = self.began.elapsed();
        if ctl.stop.load(Ordering::Relaxed)
            || long >= self.max
            || (!self.detector.heard() && long >= self.wait_for_speech)
        {
            self.stop();
        }
        out
    }

    fn stop(&mut self) {
        if self.stopped.is_none() {
            self.stopped = Some(Instant::now());
            self.capture.stop();
        }
    }

    fn heard(&self) -> bool {
        self.detector.heard()
    }

    /// Since recording stopped (the figure `Final` carries).
    fn since_stop(&self) -> Duration {
        self.stopped.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Writes the utterance when the settings ask for it.
    fn save(&self, config: &Config, emit: &dyn Fn(Event)) {
        let Some(dir) = &config.save_dir else { return };
        let name = format!(
            "voice-{}.wav",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
        );
        let path = dir.join(name);
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, wav::encode(&self.all)));
        if let Err(e) = written {
            emit(Event::Note(format!(
                "could not save the audio to {}: {e}",
                path.display()
            )));
        }
    }
}

/// Whether something listens at the endpoint's host and port (for
/// `tern doctor`; no audio, no key is sent).
pub fn reachable(endpoint: &str, timeout: Duration) -> Result<(), String> {
    use std::net::ToSocketAddrs;
    let (scheme, rest) = endpoint
        .split_once("://")
        .ok_or_else(|| format!("{endpoint} is not a URL"))?;
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let default_port = match scheme {
        "https" | "wss" => 443,
        _ => 80,
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => {
            (h, p.parse().map_err(|_| format!("bad port in {endpoint}"))?)
        }
        _ => (authority, default_port),
    };
    let host = host.trim_matches(['[', ']']);
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}: {e}"))?;
    let mut last = format!("{host}: no address");
    for a in addrs {
        match std::net::TcpStream::connect_timeout(&a, timeout) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("nothing answers at {host}:{port}: {e}"),
        }
    }
    Err(last)
}

/// A transcript as composer text: the server's string is untrusted, so
/// no control characters (a terminal escape would reach the screen), and
/// one line with single spaces.
fn clean(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The server's words, as a short line (never the request, never the key).
fn server_words(body: &str) -> String {
    let from_json = crate::json::parse(body).ok().and_then(|v| {
        let e = v.get("error");
        e.and_then(|e| e.get("message"))
            .or(e)
            .or_else(|| v.get("detail"))
            .or_else(|| v.get("description"))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_environment_wins_and_the_scheme_picks_the_backend() {
        let setting = crate::json::parse(
            r#"{"endpoint": "http://stt:8000", "model": "small", "recorder": ["arecord", "-D", "hw:1"], "silenceMs": 900, "apiKeyEnv": "MY_STT_KEY"}"#,
        )
        .unwrap();
        let mut w = Vec::new();
        let c = Config::new(Some(&setting), env(&[("MY_STT_KEY", "k-123")]), &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.backend, Backend::Http);
        assert_eq!(c.endpoint.as_deref(), Some("http://stt:8000"));
        assert_eq!(c.silence, Duration::from_millis(900));
        assert_eq!(c.key.as_deref(), Some("k-123"));
        assert_eq!(c.key_source.as_deref(), Some("MY_STT_KEY"));
        assert!(matches!(&c.source, Source::Command(Some(a)) if a[2] == "hw:1"));
        // The key never shows in a debug print.
        assert!(!format!("{c:?}").contains("k-123"));

        let c = Config::new(
            Some(&setting),
            env(&[
                ("TERN_VOICE_ENDPOINT", "wss://stt.example/v1/listen"),
                ("TERN_VOICE_SOURCE", "file:/tmp/a.wav"),
                (
                    "TERN_VOICE_KEY",
                    "ignored: the setting names another variable",
                ),
            ]),
            &mut w,
        );
        assert_eq!(c.backend, Backend::WebSocket);
        assert_eq!(c.source, Source::File(PathBuf::from("/tmp/a.wav")));
        assert_eq!(c.key, None);
    }

    #[test]
    fn bad_values_are_warned_and_left_at_their_defaults() {
        let setting = crate::json::parse(
            r#"{"recorder": "arecord", "silenceMs": "soon", "backend": "carrier-pigeon"}"#,
        )
        .unwrap();
        let mut w = Vec::new();
        let c = Config::new(
            Some(&setting),
            env(&[("TERN_VOICE_SOURCE", "microphone 2")]),
            &mut w,
        );
        assert_eq!(w.len(), 4, "{w:?}");
        assert_eq!(c.source, Source::Command(None));
        assert_eq!(c.silence, Config::default().silence);
        assert_eq!(c.backend, Backend::Http);
    }

    #[test]
    fn transcripts_lose_their_control_characters() {
        assert_eq!(clean("  hello\x1b[2J\n world\t "), "hello [2J world");
        assert_eq!(
            server_words(r#"{"error": {"message": "bad\u001b[31m key"}}"#),
            "bad [31m key"
        );
    }
}
