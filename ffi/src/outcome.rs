//! The call contract's table (core's `outcome` module, `docs/outcomes.md`) as the
//! bindings show it: one row of verdict names per outcome, so every binding lists the same
//! guards in the same order.

use guards_core::outcome::Outcome;

/// What each guard does with `o`, by name: `(column, verdict)` for the columns with one
/// verdict each (`breaker_call`, `breaker_probe`, `bulkhead`, `limiter`, `retry_budget`,
/// `adaptive_throttle`, `latency`). The retry verdict (a cause or a give-up reason) and the
/// brownout's refusal kind (or none) are `o.retry()` and `o.brownout()`.
pub fn verdict_names(o: Outcome) -> [(&'static str, &'static str); 7] {
    [
        ("breaker_call", o.breaker(false).name()),
        ("breaker_probe", o.breaker(true).name()),
        ("bulkhead", o.bulkhead().name()),
        ("limiter", o.limiter().name()),
        ("retry_budget", o.retry_budget().name()),
        ("adaptive_throttle", o.adaptive_throttle().name()),
        ("latency", o.latency().name()),
    ]
}
