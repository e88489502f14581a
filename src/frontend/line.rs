//! Line mode: the interactive session without the `tui` feature, usable on
//! dumb terminals and over SSH.
//!
//! At the prompt the terminal is in non-canonical mode and a small editor
//! handles the keys (arrows, history, Ctrl-A/E/U/D). While a turn runs the
//! terminal is back in canonical mode: the kernel edits lines, whatever is
//! typed is queued and sent after the turn, and Ctrl-C (SIGINT, as usual)
//! interrupts the turn. Ctrl-C at an empty prompt, twice, exits.
//! All standard input goes through one reader, so permission answers and
//! queued messages never steal each other's lines.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::Mutex;

use crate::abort::Abort;
use crate::agent::pipeline::{Approval, Approver, Asking};
use crate::frontend::approve::{parse_answer, parse_choice, parse_plan_answer};
use crate::json::Value;
use crate::tools::{LocalFuture, Topic};

/// The terminal settings found at start, put back on every way out.
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Whether the TUI has drawn on the terminal (bracketed paste on).
static DRAWING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The TUI took (true) or gave back (false) the terminal's modes beyond
/// termios, which [`restore_terminal`] then also undoes.
#[cfg_attr(not(feature = "tui"), allow(dead_code))]
pub(crate) fn drawing(on: bool) {
    DRAWING.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Restores the terminal as tern found it (safe to call any time).
pub fn restore_terminal() {
    if DRAWING.swap(false, std::sync::atomic::Ordering::Relaxed) {
        let mut out = std::io::stdout();
        let _ = out
            .write_all(b"\x1b[?2026l\x1b[?2004l\x1b[0m\x1b[?25h")
            .and_then(|()| out.flush());
    }
    if let Ok(saved) = SAVED.lock()
        && let Some(t) = saved.as_ref()
    {
        // SAFETY: a termios previously filled by tcgetattr on fd 0.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
    }
}

pub(crate) fn save_terminal() -> bool {
    // SAFETY: tcgetattr fills the zeroed struct for fd 0 or fails.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(0, &mut t) } != 0 {
        return false;
    }
    if let Ok(mut saved) = SAVED.lock() {
        *saved = Some(t);
    }
    true
}

/// Non-canonical, no echo; signals stay on so Ctrl-C is still SIGINT.
fn raw_mode() {
    let Ok(saved) = SAVED.lock() else { return };
    let Some(mut t) = *saved else { return };
    t.c_lflag &= !(libc::ICANON | libc::ECHO);
    t.c_cc[libc::VMIN] = 1;
    t.c_cc[libc::VTIME] = 0;
    // SAFETY: a valid termios for fd 0.
    unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
}

/// Everything read from standard input, shared by the prompt editor, the
/// turn-time line queue and permission questions.
pub struct Input {
    chunks: smol::channel::Receiver<Vec<u8>>,
    /// Bytes read but not yet used (a partial line).
    leftover: RefCell<Vec<u8>>,
    /// Lines typed during a turn, sent after it.
    pub queue: RefCell<VecDeque<String>>,
    /// A permission question waiting for its answer line.
    answer: RefCell<Option<smol::channel::Sender<String>>>,
    /// Editing keys work (a real terminal, not TERM=dumb).
    pub editing: bool,
    pub history: RefCell<Vec<String>>,
    /// Text the next prompt starts with (a voice transcript to edit).
    preset: RefCell<Option<String>>,
}

impl Input {
    /// Starts the reader thread.
    pub fn start() -> std::rc::Rc<Input> {
        let (tx, rx) = smol::channel::unbounded();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send_blocking(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let editing = !dumb && save_terminal();
        std::rc::Rc::new(Input {
            chunks: rx,
            leftover: RefCell::new(Vec::new()),
            queue: RefCell::new(VecDeque::new()),
            answer: RefCell::new(None),
            editing,
            history: RefCell::new(Vec::new()),
            preset: RefCell::new(None),
        })
    }

    async fn next_chunk(&self) -> Option<Vec<u8>> {
        let left = std::mem::take(&mut *self.leftover.borrow_mut());
        if !left.is_empty() {
            return Some(left);
        }
        self.chunks.recv().await.ok()
    }

    /// While a turn runs: whole lines go to a waiting permission question,
    /// or else to the queue. Never returns; dropped when the turn ends.
    pub async fn pump_lines(&self) {
        while let Some(chunk) = self.next_chunk().await {
            let mut buf = std::mem::take(&mut *self.leftover.borrow_mut());
            buf.extend(chunk);
            while let Some(at) = buf.iter().position(|&b| b == b'\n') {
                let line = String::from_utf8_lossy(&buf[..at])
                    .trim_end_matches('\r')
                    .to_string();
                buf.drain(..=at);
                let waiting = self.answer.borrow_mut().take();
                match waiting {
                    Some(tx) => {
                        let _ = tx.try_send(line);
                    }
                    None if !line.trim().is_empty() => {
                        eprintln!("  (queued: {line})");
                        self.queue.borrow_mut().push_back(line);
                    }
                    None => {}
                }
            }
            *self.leftover.borrow_mut() = buf;
        }
        std::future::pending::<()>().await
    }

    /// Reads one line at the prompt, with editing when the terminal allows.
    /// `None` at end of input (Ctrl-D on an empty line).
    pub async fn read_line(&self, prompt: &str, abort: &Abort) -> Option<String> {
        let mut err = std::io::stderr();
        let _ = write!(err, "{prompt}");
        let _ = err.flush();
        if !self.editing {
            return self.read_plain_line(abort).await;
        }
        raw_mode();
        let line = self.edit(prompt, abort).await;
        restore_terminal();
        line
    }

    async fn read_plain_line(&self, abort: &Abort) -> Option<String> {
        let preset = self.preset.borrow_mut().take();
        if let Some(p) = &preset {
            eprint!("\n(heard: {p})\n(Enter sends it; or type a message instead)\n> ");
        }
        let line = self.read_plain(abort).await?;
        Some(match preset {
            Some(p) if line.trim().is_empty() => p,
            _ => line,
        })
    }

    async fn read_plain(&self, abort: &Abort) -> Option<String> {
        let mut buf = Vec::new();
        let mut watch = !abort.is_triggered();
        loop {
            let chunk = smol::future::or(async { self.next_chunk().await }, async {
                if watch {
                    abort.wait().await;
                } else {
                    std::future::pending::<()>().await;
                }
                Some(Vec::new())
            })
            .await?;
            if chunk.is_empty() && abort.is_triggered() {
                watch = false;
                eprintln!("\n(press Ctrl-C again to exit, or type a message)");
                continue;
            }
            buf.extend(chunk);
            if let Some(at) = buf.iter().position(|&b| b == b'\n') {
                *self.leftover.borrow_mut() = buf[at + 1..].to_vec();
                return Some(
                    String::from_utf8_lossy(&buf[..at])
                        .trim_end_matches('\r')
                        .to_string(),
                );
            }
        }
    }

    async fn edit(&self, prompt: &str, abort: &Abort) -> Option<String> {
        let mut line: Vec<char> = self
            .preset
            .borrow_mut()
            .take()
            .map_or(Vec::new(), |p| p.chars().collect());
        let mut cursor = line.len();
        let history = self.history.borrow().clone();
        let mut recall = history.len();
        let mut pending: VecDeque<u8> = VecDeque::new();
        let redraw = |line: &[char], cursor: usize| {
            let text: String = line.iter().collect();
            let back = line.len() - cursor;
            let mut out = format!("\r\x1b[K{prompt}{text}");
            if back > 0 {
                out.push_str(&format!("\x1b[{back}D"));
            }
            let mut err = std::io::stderr();
            let _ = err.write_all(out.as_bytes()).and_then(|()| err.flush());
        };
        // Ctrl-C at the prompt triggers the token. On a line with text it
        // clears the line; on an empty one the token stays set, so the
        // next Ctrl-C exits (the signal watcher sees it already set).
        let mut watch = !abort.is_triggered();
        if !line.is_empty() {
            redraw(&line, cursor);
        }
        loop {
            if pending.is_empty() {
                let chunk = smol::future::or(async { self.next_chunk().await }, async {
                    if watch {
                        abort.wait().await;
                    } else {
                        std::future::pending::<()>().await;
                    }
                    Some(Vec::new())
                })
                .await?;
                if chunk.is_empty() && abort.is_triggered() {
                    if line.is_empty() {
                        watch = false;
                        eprint!("\n(press Ctrl-C again to exit, or type a message)\n");
                    } else {
                        abort.reset();
                        line.clear();
                        cursor = 0;
                    }
                    redraw(&line, cursor);
                    continue;
                }
                pending.extend(chunk);
            }
            let Some(b) = pending.pop_front() else {
                continue;
            };
            match b {
                b'\r' | b'\n' => {
                    // The rest belongs to the next read.
                    *self.leftover.borrow_mut() = pending.into_iter().collect();
                    eprintln!();
                    return Some(line.into_iter().collect());
                }
                4 if line.is_empty() => {
                    eprintln!();
                    return None;
                }
                1 => cursor = 0,
                5 => cursor = line.len(),
                21 => {
                    line.drain(..cursor);
                    cursor = 0;
                }
                127 | 8 if cursor > 0 => {
                    line.remove(cursor - 1);
                    cursor -= 1;
                }
                0x1b => {
                    // ESC [ X: arrows, Home, End.
                    while pending.len() < 2 {
                        match self.chunks.recv().await {
                            Ok(more) => pending.extend(more),
                            Err(_) => break,
                        }
                    }
                    if pending.front() != Some(&b'[') {
                        continue;
                    }
                    pending.pop_front();
                    match pending.pop_front() {
                        Some(b'A') if recall > 0 => {
                            recall -= 1;
                            line = history[recall].chars().collect();
                            cursor = line.len();
                        }
                        Some(b'B') if recall < history.len() => {
                            recall += 1;
                            line = history
                                .get(recall)
                                .map_or(Vec::new(), |h| h.chars().collect());
                            cursor = line.len();
                        }
                        Some(b'C') if cursor < line.len() => cursor += 1,
                        Some(b'D') if cursor > 0 => cursor -= 1,
                        Some(b'H') => cursor = 0,
                        Some(b'F') => cursor = line.len(),
                        _ => {}
                    }
                }
                b if b >= 0x20 => {
                    // Gather a whole UTF-8 character.
                    let width = match b {
                        0xf0.. => 4,
                        0xe0.. => 3,
                        0xc0.. => 2,
                        _ => 1,
                    };
                    let mut bytes = vec![b];
                    while bytes.len() < width {
                        match pending.pop_front() {
                            Some(x) => bytes.push(x),
                            None => match self.chunks.recv().await {
                                Ok(more) => pending.extend(more),
                                Err(_) => break,
                            },
                        }
                    }
                    for c in String::from_utf8_lossy(&bytes).chars() {
                        line.insert(cursor, c);
                        cursor += 1;
                    }
                }
                _ => {}
            }
            redraw(&line, cursor);
        }
    }
}

#[cfg(feature = "voice")]
impl Input {
    /// `/voice`: listens until Enter (or the pause after speech), showing
    /// interim text; the transcript becomes the next prompt's text, to be
    /// edited and sent. Esc or Ctrl-C gives up. Never sends anything.
    pub async fn dictate(&self, config: &crate::voice::Config, abort: &Abort) {
        use crate::voice::Event;
        enum Got {
            Voice(Option<Event>),
            Keys(Option<Vec<u8>>),
            Interrupted,
        }
        let listening = crate::voice::start(config.clone());
        let live = self.editing;
        if live {
            raw_mode();
        }
        let show = |t: &str| {
            let t = crate::frontend::preview::visible(t);
            if live {
                eprint!("\r\x1b[K{t}");
            } else {
                eprintln!("{t}");
            }
        };
        let mut input_open = true;
        let mut heard = None;
        loop {
            let keys = async {
                if input_open {
                    Got::Keys(self.next_chunk().await)
                } else {
                    std::future::pending().await
                }
            };
            let got = smol::future::or(
                async { Got::Voice(listening.next().await) },
                smol::future::or(keys, async {
                    abort.wait().await;
                    Got::Interrupted
                }),
            )
            .await;
            match got {
                Got::Voice(None) => break,
                Got::Voice(Some(ev)) => match ev {
                    Event::Listening(from) => {
                        show(&format!(
                            "(listening through {from}; Enter stops, Esc cancels)"
                        ));
                        if live {
                            eprintln!();
                        }
                    }
                    Event::Speech => {}
                    Event::Interim(t) => show(&format!("… {t}")),
                    Event::Transcribing => show("(transcribing…)"),
                    Event::Note(m) => {
                        show(&format!("(voice: {m})"));
                        if live {
                            eprintln!();
                        }
                    }
                    Event::Final(t, _) => heard = Some(t),
                    Event::Failed(e) => {
                        show(&format!("tern: voice: {e}"));
                        if live {
                            eprintln!();
                        }
                    }
                },
                Got::Keys(None) => {
                    input_open = false;
                    listening.stop();
                }
                Got::Keys(Some(bytes)) => {
                    if bytes.contains(&0x1b) {
                        listening.cancel();
                        show("(voice cancelled)");
                        break;
                    }
                    if bytes.iter().any(|b| matches!(b, b'\n' | b'\r' | b' ')) {
                        listening.stop();
                    }
                }
                Got::Interrupted => {
                    abort.reset();
                    listening.cancel();
                    show("(voice cancelled)");
                    break;
                }
            }
        }
        if live {
            restore_terminal();
            eprint!("\r\x1b[K");
        }
        if heard.is_some() {
            *self.preset.borrow_mut() = heard;
        }
    }
}

/// Permission questions in line mode: asked on stderr, answered by the
/// next line typed (which the turn's line pump hands over).
pub struct LineApprover {
    pub input: std::rc::Rc<Input>,
    lock: smol::lock::Mutex<()>,
    /// Relative paths in tool inputs are read from here for the preview.
    cwd: std::path::PathBuf,
    color: bool,
}

impl LineApprover {
    pub fn new(input: std::rc::Rc<Input>, cwd: std::path::PathBuf) -> LineApprover {
        use std::io::IsTerminal;
        let color = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var("TERM").map_or(true, |t| t != "dumb");
        LineApprover {
            input,
            lock: smol::lock::Mutex::new(()),
            cwd,
            color,
        }
    }
}

impl LineApprover {
    /// The next line typed (None when input ended).
    pub(crate) async fn next_line(&self) -> Option<String> {
        let (tx, rx) = smol::channel::bounded(1);
        *self.input.answer.borrow_mut() = Some(tx);
        rx.recv().await.ok()
    }

    /// AskUserQuestion: each question with numbered options; the answers
    /// go back in the input, as an SDK's would.
    async fn ask_questions(&self, input: &Value) -> Approval {
        use super::preview::visible;
        let Ok(questions) = crate::tools::questions(input) else {
            return Approval::Deny(None);
        };
        let mut answers = crate::json::Map::new();
        for q in &questions {
            let header = if q.header.is_empty() {
                String::new()
            } else {
                format!("[{}] ", visible(q.header))
            };
            eprintln!("\n{header}{}", visible(q.question));
            for (i, (label, description)) in q.options.iter().enumerate() {
                eprintln!("  {}. {}  {}", i + 1, visible(label), visible(description));
            }
            let how = if q.multi {
                "numbers separated by commas"
            } else {
                "a number"
            };
            eprint!("Answer with {how}, or type your own answer (n declines): ");
            loop {
                let Some(line) = self.next_line().await else {
                    return Approval::Deny(None);
                };
                match parse_choice(&line, &q.options, q.multi) {
                    Ok(Some(answer)) => {
                        answers.insert(q.question, answer);
                        break;
                    }
                    Ok(None) => {
                        return Approval::Deny(Some("The user chose not to answer.".into()));
                    }
                    Err(why) => eprint!("Please {why}: "),
                }
            }
        }
        let mut changed = input.clone();
        if let Value::Object(m) = &mut changed {
            m.insert("answers", Value::Object(answers));
        }
        Approval::OnceWith(changed)
    }

    /// ExitPlanMode: the plan whole, then whether to leave plan mode and
    /// for which mode.
    async fn ask_plan(&self, input: &Value) -> Approval {
        eprintln!("\nThe plan:\n");
        for line in input.str_field("plan").unwrap_or("").lines() {
            eprintln!("  {}", super::preview::visible(line));
        }
        eprint!(
            "\nLeave plan mode and start?\n  1 = yes, and accept edits without asking\n  2 = yes, and ask before each edit\n  n = no, keep planning (n <feedback> tells tern what to change)\n[1/2/n] "
        );
        loop {
            let Some(line) = self.next_line().await else {
                return Approval::Deny(None);
            };
            if let Some(a) = parse_plan_answer(&line) {
                return a;
            }
            eprint!("Please answer 1, 2 or n: ");
        }
    }
}

#[cfg(feature = "mcp")]
impl LineApprover {
    /// An MCP server's form, field by field on the terminal: Enter takes
    /// the default (or leaves an optional field out), a blank line ends
    /// nothing early; the last question sends, declines or cancels.
    pub(crate) async fn form(
        &self,
        server: &str,
        form: &crate::mcp::elicit::Form,
    ) -> crate::mcp::elicit::Elicited {
        use super::preview::visible;
        use crate::mcp::elicit::{Elicited, Kind, shown};
        let _one_at_a_time = self.lock.lock().await;
        eprintln!("\nMCP server {} asks:", visible(server));
        for line in form.message.lines() {
            eprintln!("  {}", visible(line));
        }
        let mut answers = crate::json::Map::new();
        for f in &form.fields {
            let mut about = visible(&f.label);
            if !f.description.is_empty() {
                about.push_str(&format!(" — {}", visible(&f.description)));
            }
            if f.required {
                about.push_str(" (required)");
            }
            eprintln!("{about}");
            if let Kind::Choice { choices, .. } = &f.kind {
                for (i, (_, title)) in choices.iter().enumerate() {
                    eprintln!("  {}. {}", i + 1, visible(title));
                }
            }
            eprint!("[{}] ", f.hint());
            loop {
                let Some(line) = self.next_line().await else {
                    return Elicited::Cancel;
                };
                if line.trim().is_empty() {
                    if let Some(d) = &f.default {
                        answers.insert(f.name.as_str(), d.clone());
                        break;
                    }
                    if !f.required {
                        break;
                    }
                    eprint!("This one is required: ");
                    continue;
                }
                match f.read(&line) {
                    Ok(v) => {
                        answers.insert(f.name.as_str(), v);
                        break;
                    }
                    Err(why) => eprint!("Please {}: ", why.trim_start_matches("must be ")),
                }
            }
        }
        for (k, v) in answers.iter() {
            eprintln!("  {}: {}", visible(k), visible(&shown(v)));
        }
        eprint!(
            "Send these answers to {}? [y = send, n = decline, c = cancel] ",
            visible(server)
        );
        loop {
            let Some(line) = self.next_line().await else {
                return Elicited::Cancel;
            };
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Elicited::Accept(answers),
                "n" | "no" => return Elicited::Decline,
                "c" | "cancel" => return Elicited::Cancel,
                _ => eprint!("Please answer y, n or c: "),
            }
        }
    }
}

impl Approver for LineApprover {
    fn approve<'a>(&'a self, asking: Asking<'a>) -> LocalFuture<'a, Approval> {
        let Asking {
            tool,
            input,
            question,
            suggestion,
            topic,
            ..
        } = asking;
        Box::pin(async move {
            let _one_at_a_time = self.lock.lock().await;
            match topic {
                Topic::Answers => return self.ask_questions(input).await,
                Topic::Plan => return self.ask_plan(input).await,
                Topic::Permission | Topic::Edit => {}
            }
            let options = match suggestion {
                Some(rule) => format!(
                    "  y = yes, once   s = yes, and allow {rule} for this session\n  a = yes, and always allow {rule} (saved in .tern/settings.local.json)\n  n = no   (n <reason> tells tern why)"
                ),
                None => "  y = yes, once   n = no   (n <reason> tells tern why)".to_string(),
            };
            let shown: String = super::preview::preview(tool, input, &self.cwd)
                .iter()
                .map(|l| l.render(self.color) + "\n")
                .collect();
            let question = super::preview::visible(question);
            eprint!("\n{question}.\n{shown}{options}\nAllow? [y/s/a/N] ");
            loop {
                let (tx, rx) = smol::channel::bounded(1);
                *self.input.answer.borrow_mut() = Some(tx);
                let Ok(line) = rx.recv().await else {
                    return Approval::Deny(None);
                };
                if let Some(a) = parse_answer(&line, suggestion.is_some()) {
                    return a;
                }
                eprint!("Please answer y, s, a or n: ");
            }
        })
    }
}
