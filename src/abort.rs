//! A cancellation token shared by the loop, the executor and the tools.
//!
//! Triggered once (SIGINT, SIGTERM, or an SDK interrupt later); everyone
//! waiting on it wakes. It lives on the single executor thread, so it is
//! `Rc` and not `Sync`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

#[derive(Clone)]
pub struct Abort {
    inner: Rc<Inner>,
}

struct Inner {
    reason: Cell<Option<Reason>>,
    // Closing the channel is the wake-up: every pending `recv` returns.
    channel: RefCell<(smol::channel::Sender<()>, smol::channel::Receiver<()>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A signal arrived (its number).
    Signal(i32),
    /// Asked for by a controlling program.
    Requested,
    /// The run's time limit passed (`--max-duration`).
    TimeLimit,
}

impl Default for Abort {
    fn default() -> Self {
        Self::new()
    }
}

impl Abort {
    pub fn new() -> Self {
        Abort {
            inner: Rc::new(Inner {
                reason: Cell::new(None),
                channel: RefCell::new(smol::channel::bounded(1)),
            }),
        }
    }

    pub fn trigger(&self, reason: Reason) {
        if self.inner.reason.get().is_none() {
            self.inner.reason.set(Some(reason));
        }
        self.inner.channel.borrow().0.close();
    }

    /// Arms the token again for the next prompt of a long-lived session
    /// (an SDK interrupt ends one turn, not the session). Everyone holding
    /// a clone sees the fresh state.
    pub fn reset(&self) {
        if self.inner.reason.take().is_some() {
            *self.inner.channel.borrow_mut() = smol::channel::bounded(1);
        }
    }

    pub fn reason(&self) -> Option<Reason> {
        self.inner.reason.get()
    }

    pub fn is_triggered(&self) -> bool {
        self.inner.reason.get().is_some()
    }

    /// Resolves once triggered.
    pub async fn wait(&self) {
        let rx = self.inner.channel.borrow().1.clone();
        while rx.recv().await.is_ok() {}
    }
}
