//! Key routing and what reaches the terminal, without one.

use super::*;

fn tui() -> Tui {
    let (_tx, keys) = smol::channel::unbounded();
    let screen = Screen::new(Box::new(std::io::sink()), 80, 24);
    let composer = Composer::new(Vec::new(), None);
    let t = Tui::new(
        screen,
        composer,
        Status::default(),
        false,
        std::env::temp_dir(),
        keys,
    );
    t.state.borrow_mut().busy = true;
    t
}

fn open(t: &Tui) -> smol::channel::Receiver<Picked> {
    let (tx, rx) = smol::channel::bounded(1);
    let d = Dialog::new(
        "Allow Write?".into(),
        vec!["Yes".into(), "Yes, and accept edits".into(), "No".into()],
        Some(2),
    );
    t.state.borrow_mut().dialog = Some((d, tx));
    rx
}

#[derive(Clone, Default)]
struct Sink(std::rc::Rc<RefCell<Vec<u8>>>);
impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Regression: a server's error text reached the status notice raw.
#[test]
fn text_from_the_server_and_the_model_never_reaches_the_terminal_raw() {
    let t = tui();
    let sink = Sink::default();
    t.state.borrow_mut().screen = Screen::new(Box::new(sink.clone()), 80, 24);
    let hostile = "\x1b]0;owned\x07\x1b[2J";
    let error = crate::model::ApiError::InStream {
        kind: "overloaded_error".into(),
        message: hostile.into(),
    };
    t.event(&Event::Retrying {
        attempt: 1,
        max_retries: 3,
        delay: Duration::from_secs(1),
        error: &error,
    });
    t.event(&Event::TextDelta(hostile));
    t.event(&Event::TextDelta("\n"));
    t.say(hostile);
    t.echo(hostile);
    let out = String::from_utf8_lossy(&sink.0.borrow()).into_owned();
    assert!(out.contains("owned"), "the text is shown: {out:?}");
    assert!(
        !out.contains("\x1b]0;") && !out.contains("\x07") && !out.contains("\x1b[2J"),
        "{out:?}"
    );
}

#[test]
fn keys_typed_before_the_dialog_was_drawn_do_not_answer_it() {
    let t = tui();
    let before = Instant::now();
    std::thread::sleep(Duration::from_millis(5));
    let rx = open(&t);
    // An Enter meant for the composer, arriving late: not an answer.
    assert_eq!(t.input(Input::Key(Key::Enter, before)), None);
    assert!(
        rx.try_recv().is_err(),
        "a key from before the dialog answered it"
    );
    let now = Instant::now();
    t.input(Input::Key(Key::Down, now));
    t.input(Input::Key(Key::Enter, now));
    assert_eq!(
        rx.try_recv().ok(),
        Some(Picked::Option {
            index: 1,
            comment: None
        })
    );
}

#[test]
fn a_paste_never_answers_a_dialog_and_shift_tab_in_it_changes_no_mode() {
    let t = tui();
    let rx = open(&t);
    t.input(Input::Paste("1\r\n".into(), Instant::now()));
    assert_eq!(t.input(Input::Key(Key::BackTab, Instant::now())), None);
    assert!(rx.try_recv().is_err());
    // Ctrl-C in a dialog: no, and the turn stops.
    assert_eq!(
        t.input(Input::Key(Key::Ctrl('c'), Instant::now())),
        Some(Action::Interrupt)
    );
    assert_eq!(rx.try_recv().ok(), Some(Picked::Dismissed));
}

#[test]
fn outside_a_dialog_keys_drive_the_session() {
    let t = tui();
    let now = Instant::now();
    assert_eq!(
        t.input(Input::Key(Key::BackTab, now)),
        Some(Action::CycleMode)
    );
    assert_eq!(t.input(Input::Key(Key::Esc, now)), Some(Action::Interrupt));
    // During a turn a message is queued, not sent.
    for c in "next".chars() {
        t.input(Input::Key(Key::Char(c), now));
    }
    assert_eq!(t.input(Input::Key(Key::Enter, now)), None);
    assert_eq!(
        t.state.borrow().queued.front().map(String::as_str),
        Some("next")
    );
    t.state.borrow_mut().busy = false;
    assert_eq!(
        t.input(Input::Key(Key::Esc, now)),
        None,
        "Esc at the prompt stops nothing"
    );
    assert_eq!(t.input(Input::Key(Key::Ctrl('c'), now)), None);
    assert_eq!(
        t.input(Input::Key(Key::Ctrl('c'), now)),
        Some(Action::Exit(true))
    );
    assert_eq!(
        t.input(Input::Key(Key::Ctrl('d'), now)),
        Some(Action::Exit(false))
    );
    for c in "hi".chars() {
        t.input(Input::Key(Key::Char(c), now));
    }
    assert_eq!(
        t.input(Input::Key(Key::Enter, now)),
        Some(Action::Submit("hi".into()))
    );
}

/// Thinking is shown folded to one line, between the text around it;
/// its text is the model's, so it is cleaned like any other.
#[test]
fn thinking_is_one_folded_line_and_never_raw() {
    let t = tui();
    let sink = Sink::default();
    t.state.borrow_mut().screen = Screen::new(Box::new(sink.clone()), 80, 24);
    t.event(&Event::Thinking(
        "First read the notes, then answer \x1b]0;owned\x07 briefly and kindly to the user who asked",
    ));
    t.event(&Event::Thinking(""));
    let out = String::from_utf8_lossy(&sink.0.borrow()).into_owned();
    assert!(
        out.contains("✻ thought (15 words): First read the notes"),
        "{out:?}"
    );
    assert!(
        out.contains("✻ thought (its text was not returned)"),
        "{out:?}"
    );
    assert!(
        !out.contains("who asked"),
        "folded to its first words: {out:?}"
    );
    assert!(!out.contains("\x1b]0;"), "{out:?}");
}
