//! The inline terminal interface (feature `tui`): finished output goes to
//! the terminal's scrollback, and a live region at the bottom holds what
//! is still changing: the streaming message, running tool cards, a
//! permission dialog, the composer and the status line. No alternate
//! screen, so it works over SSH and in tmux, and what was said stays in
//! the terminal's own history.
//!
//! One [`Tui`] is shared by the session's driver (which feeds it the
//! loop's events and asks it for the next [`Action`]) and the approver
//! (which opens a dialog and waits for its answer). Keys are taken one at
//! a time, in the order they arrived, by [`Tui::next`].

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::agent::Event;
use crate::report::{Level, Report};

mod ask;
mod composer;
mod dialog;
#[cfg(feature = "mcp")]
mod form;
mod keys;
pub(crate) mod markdown;
mod rig;
mod screen;
#[cfg(test)]
mod tests;

pub use ask::TuiApprover;
use composer::Composer;
use dialog::{Dialog, Picked};
use keys::{Input, Key};
use markdown::Markdown;
pub use rig::Rig;
use screen::Screen;

/// Below this the interface says the terminal is too small.
const MIN_COLS: usize = 20;
const MIN_ROWS: usize = 5;

/// What woke the interface.
enum Got {
    Input(Option<Input>),
    /// A second passed (the cards' clocks).
    Tick,
    #[cfg(feature = "voice")]
    Voice(Option<crate::voice::Event>),
}

/// What the driver is asked to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// A message (or slash command) to send.
    Submit(String),
    /// Stop the turn (Esc, or Ctrl-C during a turn).
    Interrupt,
    /// Shift+Tab: the next permission mode.
    CycleMode,
    /// Leave: Ctrl-D on an empty composer or input closed (`false`),
    /// Ctrl-C twice (`true`: the session was interrupted).
    Exit(bool),
}

/// What the status line shows; the driver keeps it current.
#[derive(Default, Clone)]
pub struct Status {
    pub model: String,
    pub mode: String,
    /// Tokens in the last request, and the window.
    pub context: Option<(u64, u64)>,
    pub cost: f64,
    pub sandbox: bool,
    /// Background shells still running.
    pub shells: usize,
}

struct Card {
    id: String,
    name: String,
    arg: String,
    started: Instant,
    asking: bool,
    progress: String,
    /// For Edit and Write: the change, taken before it is made.
    diff: Vec<String>,
}

/// A sub-agent working in the background.
struct Worker {
    task: String,
    label: String,
    started: Instant,
}

struct State {
    screen: Screen,
    /// Background sub-agents, across turns until they end.
    workers: Vec<Worker>,
    /// The session's background shells (their cards).
    shells: Option<std::rc::Rc<crate::tools::Shells>>,
    composer: Composer,
    markdown: Markdown,
    cards: Vec<Card>,
    dialog: Option<(Dialog, smol::channel::Sender<Picked>)>,
    queued: VecDeque<String>,
    notice: Option<String>,
    status: Status,
    busy: bool,
    /// Ctrl-C was pressed once at an empty composer.
    armed: bool,
    /// While voice listens: what it is doing (the status line's mark),
    /// and the composer's text from before, which the transcript follows.
    #[cfg(feature = "voice")]
    voice: Option<(String, String)>,
}

pub struct Tui {
    state: RefCell<State>,
    /// The utterance being heard, and how to start one.
    #[cfg(feature = "voice")]
    listening: RefCell<Option<std::rc::Rc<crate::voice::Listening>>>,
    #[cfg(feature = "voice")]
    voice_config: RefCell<Option<crate::voice::Config>>,
    keys: smol::channel::Receiver<Input>,
    color: bool,
    cwd: std::path::PathBuf,
}

/// Whether this session gets the interface: a terminal on both ends, a
/// terminal that can draw, and nobody asked for line mode.
pub fn wanted(no_tui: bool) -> bool {
    use std::io::IsTerminal;
    !no_tui
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

impl Tui {
    /// Takes the terminal: raw mode (keys one by one, Ctrl-C a key, not a
    /// signal), bracketed paste. [`Tui::stop`] gives it back.
    pub fn start(
        cwd: std::path::PathBuf,
        commands: Vec<(String, String)>,
        status: Status,
    ) -> std::io::Result<std::rc::Rc<Tui>> {
        let _ = crate::frontend::line::save_terminal();
        crossterm::terminal::enable_raw_mode()?;
        // A panic aborts the process: the terminal is given back first,
        // or the shell would be left in raw mode.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            crate::frontend::line::restore_terminal();
            previous(info);
        }));
        crate::frontend::line::drawing(true);
        let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let mut out = std::io::stdout();
        use std::io::Write;
        let _ = out.write_all(b"\x1b[?2004h").and_then(|()| out.flush());
        let screen = Screen::new(Box::new(std::io::stdout()), cols.into(), rows.into());
        let composer = Composer::new(commands, Some(cwd.clone()));
        let tui = Tui::new(screen, composer, status, color, cwd, keys::start_reader());
        tui.redraw();
        Ok(std::rc::Rc::new(tui))
    }

    /// The interface over `screen`, taking its keys from `keys`.
    fn new(
        screen: Screen,
        composer: Composer,
        status: Status,
        color: bool,
        cwd: std::path::PathBuf,
        keys: smol::channel::Receiver<Input>,
    ) -> Tui {
        Tui {
            state: RefCell::new(State {
                workers: Vec::new(),
                shells: None,
                screen,
                composer,
                markdown: Markdown::new(color),
                cards: Vec::new(),
                dialog: None,
                queued: VecDeque::new(),
                notice: None,
                status,
                busy: false,
                armed: false,
                #[cfg(feature = "voice")]
                voice: None,
            }),
            #[cfg(feature = "voice")]
            listening: RefCell::new(None),
            #[cfg(feature = "voice")]
            voice_config: RefCell::new(None),
            keys,
            color,
            cwd,
        }
    }

    /// Gives the terminal back as it was found.
    pub fn stop(&self) {
        self.state.borrow_mut().screen.leave();
        let _ = crossterm::terminal::disable_raw_mode();
        crate::frontend::line::restore_terminal();
    }

    /// The background shells to show as cards while they run.
    pub fn watch_shells(&self, shells: std::rc::Rc<crate::tools::Shells>) {
        self.state.borrow_mut().shells = Some(shells);
    }

    /// Commands that joined since the start (MCP prompts), for completion.
    pub fn add_commands(&self, more: Vec<(String, String)>) {
        let mut s = self.state.borrow_mut();
        for (name, what) in more {
            let name = format!("/{name}");
            if !s.composer.commands.iter().any(|(n, _)| *n == name) {
                s.composer.commands.push((name, what));
            }
        }
    }

    pub fn set_status(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.state.borrow_mut().status);
        self.redraw();
    }

    pub fn set_busy(&self, busy: bool) {
        {
            let mut s = self.state.borrow_mut();
            s.busy = busy;
            // A retry notice is about the turn that had it.
            s.notice = None;
            if !busy {
                // A dialog whose question went with the turn (a signal
                // ended it) answers nothing.
                s.dialog = None;
                let w = s.screen.cols;
                let rest = s.markdown.finish(w);
                s.cards.clear();
                drop(s);
                self.commit(rest);
            }
        }
        self.redraw();
    }

    /// Messages typed during a turn, oldest first.
    pub fn take_queued(&self) -> Option<String> {
        let q = self.state.borrow_mut().queued.pop_front();
        self.redraw();
        q
    }

    /// Plain text into the scrollback (command output, notices): wrapped,
    /// controls made visible.
    pub fn say(&self, text: &str) {
        let w = self.state.borrow().screen.cols;
        let lines: Vec<String> = text
            .trim_end_matches('\n')
            .split('\n')
            .flat_map(|l| markdown::wrap(&crate::frontend::preview::visible(l), w))
            .collect();
        self.commit(lines);
    }

    /// The prompt as sent, into the scrollback.
    pub fn echo(&self, text: &str) {
        let w = self.state.borrow().screen.cols;
        let lines: Vec<String> = text
            .split('\n')
            .enumerate()
            .flat_map(|(i, l)| {
                let l = crate::frontend::preview::visible(l);
                let l = if i == 0 {
                    format!("> {l}")
                } else {
                    format!("  {l}")
                };
                markdown::wrap(&l, w)
            })
            .map(|l| self.paint("1", &l))
            .collect();
        self.commit(lines);
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    fn commit(&self, lines: Vec<String>) {
        let (live, cursor) = self.live();
        self.state.borrow_mut().screen.commit(&lines, live, cursor);
    }

    fn redraw(&self) {
        let (live, cursor) = self.live();
        self.state.borrow_mut().screen.draw(live, cursor);
    }

    /// The live region's lines and the cursor's place in them.
    fn live(&self) -> (Vec<String>, (usize, usize)) {
        let mut s = self.state.borrow_mut();
        let (cols, rows) = (s.screen.cols, s.screen.rows);
        if cols < MIN_COLS || rows < MIN_ROWS {
            let say = format!("too small: {cols}x{rows}, tern needs {MIN_COLS}x{MIN_ROWS}");
            return (markdown::wrap(&say, cols), (0, 0));
        }
        let mut out: Vec<String> = Vec::new();
        // The streaming tail: at most half the screen (the rest is in the
        // scrollback already, or will be).
        let pending = s.markdown.pending(cols);
        let keep = rows / 2;
        out.extend(
            pending
                .into_iter()
                .rev()
                .take(keep)
                .collect::<Vec<_>>()
                .into_iter()
                .rev(),
        );
        for c in &s.cards {
            let secs = c.started.elapsed().as_secs();
            let (mark, state) = if c.asking {
                (self.paint("33", "?"), "waiting for you".to_string())
            } else {
                (self.paint("36", "●"), format!("{secs}s"))
            };
            let mut line = format!("{mark} {} {}  {}", c.name, c.arg, self.paint("2", &state));
            if !c.progress.is_empty() && !c.asking {
                line.push_str(&self.paint("2", &format!("  {}", c.progress)));
            }
            out.push(line);
        }
        for w in &s.workers {
            let secs = w.started.elapsed().as_secs();
            out.push(format!(
                "{} {}  {}",
                self.paint("35", "◆"),
                w.label,
                self.paint("2", &format!("{secs}s"))
            ));
        }
        if let Some(shells) = &s.shells {
            for l in shells.running_listing() {
                out.push(format!(
                    "{} {}",
                    self.paint("35", "◇"),
                    crate::frontend::preview::visible(&l)
                ));
            }
        }
        let cursor;
        let dialog_lines = s.dialog.as_ref().map(|(d, _)| d.render(cols, self.color));
        if let Some((lines, at)) = dialog_lines {
            let top = out.len();
            cursor = match at {
                Some((r, c)) => (top + r, c),
                None => (top + lines.len().saturating_sub(1), 0),
            };
            out.extend(lines);
        } else {
            for q in &s.queued {
                let one: String = q
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                out.push(self.paint("2", &format!("  (queued: {one})")));
            }
            if let Some(n) = &s.notice {
                out.push(self.paint("33", n));
            }
            let top = out.len();
            let color = self.color;
            let (lines, (r, c)) = s.composer.render(cols, color);
            cursor = (top + r, c);
            out.extend(lines);
        }
        out.push(self.status_line(&s, cols));
        (out, cursor)
    }

    fn status_line(&self, s: &State, cols: usize) -> String {
        let (st, busy) = (&s.status, s.busy);
        let mut parts = vec![st.model.clone(), st.mode.clone()];
        if let Some((used, window)) = st.context
            && window > 0
        {
            parts.push(format!("ctx {}%", used * 100 / window));
        }
        parts.push(format!("${:.4}", st.cost));
        parts.push(
            if st.sandbox {
                "sandbox on"
            } else {
                "sandbox off"
            }
            .to_string(),
        );
        if st.shells > 0 {
            parts.push(format!("{} background shell(s)", st.shells));
        }
        parts.push(if busy {
            "esc interrupts".to_string()
        } else {
            "shift+tab: mode".to_string()
        });
        #[cfg(feature = "voice")]
        if let Some((phase, _)) = &s.voice {
            let line = screen::fit(&format!("● {phase} · {}", parts.join(" · ")), cols);
            return self.paint("31", &line);
        }
        let line = screen::fit(&parts.join(" · "), cols);
        self.paint("2", &line)
    }

    /// The loop's event, shown.
    pub fn event(&self, ev: &Event<'_>) {
        match ev {
            Event::TextDelta(t) => {
                let done = {
                    let mut s = self.state.borrow_mut();
                    s.markdown.push(t);
                    let w = s.screen.cols;
                    s.markdown.take_done(w)
                };
                self.commit(done);
            }
            Event::Assistant { .. } => self.flush_text(),
            Event::Thinking(text) => {
                self.flush_text();
                self.say(&crate::frontend::folded_thinking(text));
            }
            Event::Report(r) => self.report(r),
            Event::RequestUsage(u) => {
                let used =
                    u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
                let mut s = self.state.borrow_mut();
                let window = s.status.context.map_or(0, |c| c.1);
                s.status.context = Some((used, window));
                drop(s);
                self.redraw();
            }
            Event::Compacted { pre_tokens, .. } => {
                self.flush_text();
                self.say(&format!(
                    "(conversation compacted; it was about {pre_tokens} tokens)"
                ));
            }
            Event::MicroCompacted { saved_tokens } => self.say(&format!(
                "(old tool results cleared, {saved_tokens} tokens)"
            )),
            Event::Retrying {
                attempt,
                max_retries,
                delay,
                error,
            } => {
                // The server's words: shown, not obeyed.
                self.state.borrow_mut().notice = Some(crate::frontend::preview::visible(&format!(
                    "retrying ({attempt}/{max_retries}) in {:.0}s: {error}",
                    delay.as_secs_f64()
                )));
                self.redraw();
            }
            Event::FallbackModel { from, to, .. } => {
                self.say(&format!("({from} is unavailable; going on with {to})"))
            }
            Event::Relayed(crate::agent::subagent::Relayed::TaskStarted {
                task_id,
                description,
                subagent_type,
                background,
                ..
            }) => {
                let label =
                    crate::frontend::preview::visible(&format!("{subagent_type}: {description}"));
                if *background {
                    self.state.borrow_mut().workers.push(Worker {
                        task: task_id.clone(),
                        label: label.clone(),
                        started: Instant::now(),
                    });
                }
                self.say(&format!("  ↳ {label}"))
            }
            Event::Relayed(crate::agent::subagent::Relayed::TaskFinished {
                task_id,
                status,
                duration,
                ..
            }) => {
                let label = {
                    let mut s = self.state.borrow_mut();
                    let at = s.workers.iter().position(|w| &w.task == task_id);
                    at.map(|i| s.workers.remove(i).label)
                };
                let label = label.map_or(String::new(), |l| format!(" {l}"));
                self.say(&format!(
                    "  ↳ sub-agent{label} {status} ({:.1}s)",
                    duration.as_secs_f64()
                ))
            }
            _ => {}
        }
    }

    /// What the model wrote so far goes to the scrollback (before a tool
    /// card, so the order on screen is the order it happened).
    fn flush_text(&self) {
        let rest = {
            let mut s = self.state.borrow_mut();
            let w = s.screen.cols;
            s.markdown.finish(w)
        };
        self.commit(rest);
    }

    fn report(&self, r: &Report) {
        match r {
            Report::ToolStarted { id, name, input } => {
                self.flush_text();
                let diff = match name.as_str() {
                    "Edit" | "Write" => crate::frontend::preview::preview(name, input, &self.cwd)
                        .iter()
                        .map(|l| l.render(self.color))
                        .collect(),
                    _ => Vec::new(),
                };
                self.state.borrow_mut().cards.push(Card {
                    id: id.clone(),
                    name: crate::frontend::preview::visible(name),
                    arg: crate::frontend::activity::key_argument(name, input),
                    started: Instant::now(),
                    asking: false,
                    progress: String::new(),
                    diff,
                });
                self.redraw();
            }
            Report::ToolProgress { id, text } => {
                let mut s = self.state.borrow_mut();
                if let Some(c) = s.cards.iter_mut().find(|c| &c.id == id) {
                    let last = text
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("");
                    c.progress = crate::frontend::preview::visible(last)
                        .chars()
                        .take(80)
                        .collect();
                }
                drop(s);
                self.redraw();
            }
            Report::PermissionAsked { id, .. } | Report::PermissionAnswered { id, .. } => {
                let asking = matches!(r, Report::PermissionAsked { .. });
                if let Some(c) = self
                    .state
                    .borrow_mut()
                    .cards
                    .iter_mut()
                    .find(|c| &c.id == id)
                {
                    c.asking = asking;
                    if !asking {
                        // Its time on the card is its running time.
                        c.started = Instant::now();
                    }
                }
                self.redraw();
            }
            Report::ToolFinished {
                id,
                name,
                is_error,
                summary,
            } => {
                let card = {
                    let mut s = self.state.borrow_mut();
                    let at = s.cards.iter().position(|c| &c.id == id);
                    at.map(|i| s.cards.remove(i))
                };
                let took = card
                    .as_ref()
                    .map_or(Duration::ZERO, |c| c.started.elapsed());
                let arg = card.as_ref().map_or(String::new(), |c| c.arg.clone());
                let mark = if *is_error {
                    self.paint("31", "✗")
                } else {
                    self.paint("32", "✓")
                };
                let mut lines = vec![format!(
                    "{mark} {} {arg} {}  {}",
                    crate::frontend::preview::visible(name),
                    self.paint("2", &format!("({:.1}s)", took.as_secs_f64())),
                    crate::frontend::preview::visible(summary)
                )];
                if !is_error && let Some(c) = card {
                    lines.extend(c.diff);
                }
                let w = self.state.borrow().screen.cols;
                let lines = lines.into_iter().map(|l| screen::fit(&l, w)).collect();
                self.commit(lines);
            }
            Report::Notice { level, text } => {
                let text = crate::frontend::preview::visible(text);
                let line = match level {
                    Level::Warning => self.paint("33", &format!("⚠ {text}")),
                    Level::Info => self.paint("2", &text),
                };
                self.commit(vec![line]);
            }
        }
    }

    /// Opens a dialog and waits for its answer (the driver's key pump
    /// delivers the keys). `shown` goes to the scrollback first: the
    /// whole of what is being approved stays readable there.
    async fn ask(&self, shown: Vec<String>, dialog: Dialog) -> Picked {
        let (tx, rx) = smol::channel::bounded(1);
        self.commit(shown);
        {
            let mut s = self.state.borrow_mut();
            let mut dialog = dialog;
            // Only keys from now on answer it.
            dialog.opened = Instant::now();
            s.dialog = Some((dialog, tx));
        }
        self.redraw();
        let picked = rx.recv().await.unwrap_or(Picked::Dismissed);
        self.state.borrow_mut().dialog = None;
        self.redraw();
        picked
    }

    /// Waits for the next thing the driver must do, handling every other
    /// key (editing, dialogs, resizes) itself. While tool cards run, the
    /// region is redrawn each second for their clocks; otherwise nothing
    /// wakes without input.
    pub async fn next(&self) -> Action {
        loop {
            let ticking = {
                let s = self.state.borrow();
                !s.cards.is_empty()
                    || !s.workers.is_empty()
                    || s.shells.as_ref().is_some_and(|sh| sh.running() > 0)
            };
            let keys = async {
                if ticking {
                    smol::future::or(async { Got::Input(self.keys.recv().await.ok()) }, async {
                        smol::Timer::after(Duration::from_secs(1)).await;
                        Got::Tick
                    })
                    .await
                } else {
                    Got::Input(self.keys.recv().await.ok())
                }
            };
            #[cfg(feature = "voice")]
            let got = {
                let listening = self.listening.borrow().clone();
                match listening {
                    Some(l) => smol::future::or(async { Got::Voice(l.next().await) }, keys).await,
                    None => keys.await,
                }
            };
            #[cfg(not(feature = "voice"))]
            let got = keys.await;
            let input = match got {
                Got::Input(Some(input)) => input,
                Got::Input(None) => return Action::Exit(false),
                Got::Tick => {
                    self.redraw();
                    continue;
                }
                #[cfg(feature = "voice")]
                Got::Voice(ev) => {
                    self.voice_event(ev);
                    self.redraw();
                    continue;
                }
            };
            let action = self.input(input);
            self.redraw();
            if let Some(a) = action {
                return a;
            }
        }
    }

    fn input(&self, input: Input) -> Option<Action> {
        let mut s = self.state.borrow_mut();
        let (key, at) = match input {
            Input::Resize(c, r) => {
                s.screen.resize(c.into(), r.into());
                return None;
            }
            Input::Paste(text, _) => {
                // A paste never answers a dialog.
                if s.dialog.is_none() {
                    s.composer.paste(&text);
                }
                return None;
            }
            Input::Key(k, at) => (k, at),
        };
        if !matches!(key, Key::Ctrl('c')) {
            s.armed = false;
            if s.notice
                .as_deref()
                .is_some_and(|n| n.starts_with("press Ctrl-C"))
            {
                s.notice = None;
            }
        }
        if let Some((dialog, tx)) = s.dialog.as_mut()
            && at >= dialog.opened
        {
            if key == Key::Ctrl('c') {
                let _ = tx.try_send(Picked::Dismissed);
                return Some(Action::Interrupt);
            }
            if let Some(p) = dialog.key(&key) {
                let _ = tx.try_send(p);
            }
            return None;
        }
        // An open dialog has the keys first (above); then a voice session.
        #[cfg(feature = "voice")]
        if s.voice.is_some() {
            drop(s);
            self.voice_key(&key);
            return None;
        }
        #[cfg(feature = "voice")]
        if key == Key::Ctrl(' ') {
            drop(s);
            self.start_voice();
            return None;
        }
        match key {
            Key::Esc if s.composer.cancel_search() => None,
            Key::Esc if s.busy => Some(Action::Interrupt),
            Key::BackTab => Some(Action::CycleMode),
            Key::Ctrl('c') => {
                if !s.composer.is_empty() {
                    s.composer.clear();
                    None
                } else if s.busy {
                    Some(Action::Interrupt)
                } else if s.armed {
                    Some(Action::Exit(true))
                } else {
                    s.armed = true;
                    s.notice = Some("press Ctrl-C again to exit".into());
                    None
                }
            }
            Key::Ctrl('d') if s.composer.is_empty() => Some(Action::Exit(false)),
            Key::Ctrl('d') => {
                s.composer.key(&Key::Delete);
                None
            }
            Key::Ctrl('l') => {
                let (c, r) = (s.screen.cols, s.screen.rows);
                s.screen.resize(c, r);
                None
            }
            key => {
                let sent = s.composer.key(&key)?;
                if s.busy {
                    s.queued.push_back(sent);
                    None
                } else {
                    Some(Action::Submit(sent))
                }
            }
        }
    }
}

/// Voice in the composer: `/voice` and Ctrl-Space start listening; interim
/// text is written after what was typed, the final transcript replaces
/// it, and nothing is sent before Enter (see docs/voice.md).
#[cfg(feature = "voice")]
impl Tui {
    /// How `/voice` and Ctrl-Space listen.
    pub fn set_voice(&self, config: crate::voice::Config) {
        *self.voice_config.borrow_mut() = Some(config);
    }

    /// Starts listening: the status line says so, and what is heard goes
    /// to the composer after the text already there.
    pub fn start_voice(&self) {
        if self.listening.borrow().is_some() {
            return;
        }
        let Some(config) = self.voice_config.borrow().clone() else {
            self.state.borrow_mut().notice = Some("voice input is not set up".into());
            self.redraw();
            return;
        };
        let base = self.state.borrow().composer.text();
        self.state.borrow_mut().voice = Some(("starting".into(), base));
        *self.listening.borrow_mut() = Some(std::rc::Rc::new(crate::voice::start(config)));
        self.redraw();
    }

    /// Keys while listening: Ctrl-Space or Enter stops (the text is made
    /// and lands in the composer, not sent); Esc or Ctrl-C gives up.
    fn voice_key(&self, key: &Key) {
        let Some(l) = self.listening.borrow().clone() else {
            return;
        };
        match key {
            Key::Ctrl(' ') | Key::Enter => l.stop(),
            Key::Esc | Key::Ctrl('c') => {
                l.cancel();
                self.end_voice(None, Some("(voice cancelled)".into()));
            }
            _ => {}
        }
    }

    /// Back to the composer: with the transcript after the earlier text,
    /// or the earlier text alone.
    fn end_voice(&self, heard: Option<String>, notice: Option<String>) {
        *self.listening.borrow_mut() = None;
        let mut s = self.state.borrow_mut();
        if let Some((_, base)) = s.voice.take() {
            let text = match heard {
                Some(h) if base.trim().is_empty() => h,
                Some(h) => format!("{} {h}", base.trim_end()),
                None => base,
            };
            s.composer.set_text(&text);
        }
        s.notice = notice;
    }

    fn voice_event(&self, ev: Option<crate::voice::Event>) {
        use crate::voice::Event;
        let Some(ev) = ev else {
            self.end_voice(None, None);
            return;
        };
        let mut s = self.state.borrow_mut();
        let phase = |s: &mut State, p: &str| {
            if let Some((phase, _)) = s.voice.as_mut() {
                *phase = p.to_string();
            }
        };
        match ev {
            Event::Listening(_) => phase(&mut s, "listening · ctrl+space stops, esc cancels"),
            Event::Speech => phase(&mut s, "hearing you · ctrl+space stops"),
            Event::Interim(t) => {
                phase(&mut s, "hearing you (interim text) · ctrl+space stops");
                let base = s.voice.as_ref().map_or(String::new(), |v| v.1.clone());
                let shown = if base.trim().is_empty() {
                    t
                } else {
                    format!("{} {t}", base.trim_end())
                };
                s.composer.set_text(&shown);
            }
            Event::Transcribing => phase(&mut s, "transcribing"),
            Event::Note(m) => {
                s.notice = Some(crate::frontend::preview::visible(&format!("voice: {m}")))
            }
            Event::Final(t, _) => {
                drop(s);
                self.end_voice(Some(t), None);
            }
            Event::Failed(e) => {
                drop(s);
                let said = crate::frontend::preview::visible(&format!("voice: {e}"));
                self.end_voice(None, Some(said));
            }
        }
    }
}
