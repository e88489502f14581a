//! The terminal interface's costs on a long session: one keystroke in the
//! composer (the key, and the redraw of the live region it causes) and
//! one streamed token (the delta rendered, finished lines moved to the
//! scrollback), after 10,000 lines of answer have been shown. Finished
//! output lives in the terminal's scrollback, so neither should grow with
//! the session. Goals (issue 20): a keystroke ≤ 2 ms, a token ≤ 1 ms
//! (medians). The drawing goes to a sink: what is measured is tern's
//! work, not the terminal's.
//!
//! Run: `cargo bench --features tui --bench tui`.

use std::time::{Duration, Instant};

use tern::harness::TuiRig;

fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() * 9 / 10])
}

fn main() {
    let rig = TuiRig::new(120, 40);
    let began = Instant::now();
    rig.fill(10_000);
    println!(
        "10,000 lines shown in {:.1} ms",
        began.elapsed().as_secs_f64() * 1e3
    );

    let keys: Vec<Duration> = (0..2000)
        .map(|i| {
            let c = char::from(b'a' + (i % 26) as u8);
            let t = Instant::now();
            rig.key(c);
            t.elapsed()
        })
        .collect();
    let (median, p90) = stats(keys);
    println!(
        "keystroke: median {:.1} µs, p90 {:.1} µs (goal ≤ 2 ms)",
        median.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );

    let words = [
        "The ",
        "quick ",
        "**brown** ",
        "fox ",
        "`jumps` ",
        "over\n",
        "- a ",
        "list\n",
    ];
    let tokens: Vec<Duration> = (0..20_000)
        .map(|i| {
            let t = Instant::now();
            rig.token(words[i % words.len()]);
            t.elapsed()
        })
        .collect();
    let (median, p90) = stats(tokens);
    println!(
        "streamed token: median {:.1} µs, p90 {:.1} µs (goal ≤ 1 ms)",
        median.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
}
