//! List prices, for `total_cost_usd` and `--max-budget-usd`. An unknown
//! model (a local server, say) costs 0 rather than a made-up figure.

use super::stream::Usage;

/// Dollars per million tokens: (input, output).
fn per_million(model: &str) -> Option<(f64, f64)> {
    let m = model.to_ascii_lowercase();
    let price = if m.contains("opus-4-5") || m.contains("opus-4.5") {
        (5.0, 25.0)
    } else if m.contains("opus") {
        (15.0, 75.0)
    } else if m.contains("sonnet") {
        (3.0, 15.0)
    } else if m.contains("haiku-4") {
        (1.0, 5.0)
    } else if m.contains("haiku") {
        (0.8, 4.0)
    } else {
        return None;
    };
    Some(price)
}

/// What `usage` cost on `model`: cache writes at 1.25x input, cache reads
/// at 0.1x.
pub fn cost(model: &str, usage: &Usage) -> f64 {
    let Some((input, output)) = per_million(model) else {
        return 0.0;
    };
    (usage.input_tokens as f64 * input
        + usage.cache_creation_input_tokens as f64 * input * 1.25
        + usage.cache_read_input_tokens as f64 * input * 0.1
        + usage.output_tokens as f64 * output)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_by_family() {
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1_000_000,
        };
        assert!((cost("claude-sonnet-4-5", &u) - (3.0 + 1.5 + 0.3)).abs() < 1e-9);
        assert!((cost("claude-haiku-4-5", &u) - (1.0 + 0.5 + 0.1)).abs() < 1e-9);
        assert_eq!(cost("smollm2-135m", &u), 0.0);
    }
}
