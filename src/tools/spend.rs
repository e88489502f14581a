//! Model use that happens inside a tool call rather than in the agent's
//! own turns: WebFetch's question to the small model, a sub-agent's whole
//! run. Tools write it down here; the agent counts it into the session's
//! cost and per-model usage before its next turn, so `total_cost_usd`,
//! `modelUsage` and `--max-budget-usd` see it.

use std::cell::{Cell, RefCell};

use crate::model::stream::Usage;

/// One model's use, not yet counted by the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Spent {
    pub model: String,
    pub usage: Usage,
    pub cost_usd: f64,
}

#[derive(Default)]
pub struct Spend {
    pending: RefCell<Vec<Spent>>,
    /// The run's cost as the agent last counted it: with what is pending,
    /// what a tool checks against `--max-budget-usd` before spending more.
    counted: Cell<f64>,
}

impl Spend {
    /// Writes down one request (or one sub-agent's total) by `model`.
    pub fn record(&self, model: &str, usage: &Usage, cost_usd: f64) {
        self.pending.borrow_mut().push(Spent {
            model: model.to_string(),
            usage: *usage,
            cost_usd,
        });
    }

    /// What was written down since the last call; the ledger is then empty.
    pub fn take(&self) -> Vec<Spent> {
        std::mem::take(&mut *self.pending.borrow_mut())
    }

    /// The agent's count of the run's cost so far (its own turns included).
    pub fn set_counted(&self, cost_usd: f64) {
        self.counted.set(cost_usd);
    }

    /// What the run has cost so far: the agent's count and what tools
    /// wrote down since. (Asked by MCP sampling's budget check.)
    #[cfg(any(feature = "mcp", test))]
    pub fn so_far(&self) -> f64 {
        self.counted.get()
            + self
                .pending
                .borrow()
                .iter()
                .map(|s| s.cost_usd)
                .sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_taken_is_counted_once() {
        let s = Spend::default();
        let u = Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Usage::default()
        };
        s.record("small", &u, 0.5);
        s.record("big", &u, 1.0);
        let got = s.take();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].model, "small");
        assert_eq!(got[1].cost_usd, 1.0);
        assert!(s.take().is_empty());
    }

    #[test]
    fn so_far_is_the_count_plus_what_is_pending() {
        let s = Spend::default();
        s.set_counted(2.0);
        s.record("small", &Usage::default(), 0.5);
        assert_eq!(s.so_far(), 2.5);
        s.take();
        s.set_counted(2.5);
        assert_eq!(s.so_far(), 2.5);
    }
}
