//! A cancellation token shared by the loop, the executor and the tools.
//!
//! Triggered once (SIGINT, SIGTERM, or an SDK interrupt later); everyone
//! waiting on it wakes. It lives on the single executor thread, so it is
//! `Rc` and not `Sync`.

use std::cell::Cell;
use std::rc::Rc;

#[derive(Clone)]
pub struct Abort {
    inner: Rc<Inner>,
}

struct Inner {
    reason: Cell<Option<Reason>>,
    // Closing the channel is the wake-up: every pending `recv` returns.
    tx: smol::channel::Sender<()>,
    rx: smol::channel::Receiver<()>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A signal arrived (its number).
    Signal(i32),
    /// Asked for by a controlling program.
    Requested,
}

impl Default for Abort {
    fn default() -> Self {
        Self::new()
    }
}

impl Abort {
    pub fn new() -> Self {
        let (tx, rx) = smol::channel::bounded(1);
        Abort {
            inner: Rc::new(Inner {
                reason: Cell::new(None),
                tx,
                rx,
            }),
        }
    }

    pub fn trigger(&self, reason: Reason) {
        if self.inner.reason.get().is_none() {
            self.inner.reason.set(Some(reason));
        }
        self.inner.tx.close();
    }

    pub fn reason(&self) -> Option<Reason> {
        self.inner.reason.get()
    }

    pub fn is_triggered(&self) -> bool {
        self.inner.reason.get().is_some()
    }

    /// Resolves once triggered.
    pub async fn wait(&self) {
        while self.inner.rx.recv().await.is_ok() {}
    }
}
