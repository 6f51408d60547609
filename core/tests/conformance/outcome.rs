//! Conformance runner for the call contract (`tests/vectors/outcome.json`).
//!
//! # Encoding (for every language's runner)
//!
//! No config: every case is a list of steps on nothing but the `Outcome` type.
//!
//! | `op` | arguments | result (`expect`) |
//! |---|---|---|
//! | `verdicts` | `outcome` (name) | `{"number", "breaker_call", "breaker_probe", "bulkhead", "limiter", "retry_budget", "adaptive_throttle", "latency", "retry", "brownout"}`: the outcome's number, then each guard's verdict name (`Outcome::breaker(false)`, `breaker(true)`, `bulkhead`, `limiter`, `retry_budget`, `adaptive_throttle`, `latency`); `retry` is `{"retry": cause}` or `{"give_up": reason}` (`Outcome::retry`); `brownout` is `RefusalKind::of` by name, or `null` |
//! | `from_number` | `number` (integer) | the outcome's name, or `null` if no outcome has that number |
//! | `from_name` | `name` (string) | the outcome's number, or `null` if no outcome has that name |

use guards_core::brownout::RefusalKind;
use guards_core::outcome::RetryVerdict;
use guards_core::Outcome;
use serde_json::json;

use crate::common::{self, Value};

fn run_step(step: &Value) -> Value {
    match common::str_of(step, "op") {
        "verdicts" => {
            let name = common::str_of(step, "outcome");
            let o = Outcome::from_name(name).unwrap_or_else(|| panic!("unknown outcome {name}"));
            let retry = match o.retry() {
                RetryVerdict::Retry(cause) => json!({ "retry": cause.name() }),
                RetryVerdict::GiveUp(reason) => json!({ "give_up": reason.name() }),
            };
            json!({
                "number": o as u8,
                "breaker_call": o.breaker(false).name(),
                "breaker_probe": o.breaker(true).name(),
                "bulkhead": o.bulkhead().name(),
                "limiter": o.limiter().name(),
                "retry_budget": o.retry_budget().name(),
                "adaptive_throttle": o.adaptive_throttle().name(),
                "latency": o.latency().name(),
                "retry": retry,
                "brownout": RefusalKind::of(o).map(RefusalKind::name),
            })
        }
        "from_number" => {
            let n = common::u64_of(step, "number");
            let o = u8::try_from(n).ok().and_then(|n| Outcome::try_from(n).ok());
            json!(o.map(Outcome::name))
        }
        "from_name" => json!(Outcome::from_name(common::str_of(step, "name")).map(|o| o as u8)),
        other => panic!("unknown outcome op `{other}`"),
    }
}

#[test]
fn outcome_vectors() {
    common::replay("outcome", |_| Ok(()), |_, _, step| run_step(step));
}
