//! Voice in the composer: `/voice` and Ctrl-Space start listening; interim
//! text is written after what was typed, the final transcript replaces
//! it, and nothing is sent before Enter (see docs/voice.md).

use super::*;

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
    pub(super) fn voice_key(&self, key: &Key) {
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

    pub(super) fn voice_event(&self, ev: Option<crate::voice::Event>) {
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
