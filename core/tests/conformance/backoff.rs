//! Conformance runner for `backoff` (`tests/vectors/backoff.json`).
//!
//! # Encoding (for every language's runner)
//!
//! - **Config** (`config`): the `BackoffConfig` fields `base`, `cap` (integer ns),
//!   `multiplier` (number, or `"nan"`/`"inf"`/`"-inf"`) and `jitter` (`"none"`, `"full"`,
//!   `"equal"`, `"decorrelated"`). A missing key takes its default (25 ms, 20 s, 2.0,
//!   `"full"`). A case with `expect_error` must fail `Backoff::new` with that field and kind.
//! - **Random generator**: each case owns one SplitMix64 generator seeded with the case's
//!   `seed` (integer, default 0), created before its first step and shared by all its steps.
//! - **64-bit words** (random words and hashes) are strings `"0x"` + 16 lowercase hex
//!   digits, because they do not fit a JSON double. Every plain integer in the file is below
//!   2⁵³.
//! - **Ops** (`op`, arguments, `expect`):
//!   - `ceiling` `{retry}` → integer ns: `Backoff::ceiling(retry)`.
//!   - `max_delay` `{retry}` → integer ns: `Backoff::max_delay(retry)`.
//!   - `delay` `{retry, prev?}` → integer ns: `Backoff::delay(retry, prev, &case_rng)`;
//!     `prev` defaults to 0. Draws one word from the case generator unless jitter is none.
//!   - `delay_from_bits` `{retry, prev?, bits}` → integer ns:
//!     `Backoff::delay_from_bits(retry, prev, bits)`; `bits` is a hex word.
//!   - `rng_next_u64` `{}` → hex word: the case generator's next output (shows how many
//!     words earlier steps drew).
//!   - `fnv1a64` `{id}` → hex word: FNV-1a 64 of the UTF-8 bytes of the string `id`.
//!   - `stable_offset` `{id, period}` → integer ns.
//!   - `next_stable_run` `{id, period, now}` → integer ns.
//!
//!   `retry` is an integer in `0..=4294967295` (u32).

use guards_core::backoff::{
    fnv1a64, next_stable_run, stable_offset, Backoff, BackoffConfig, Jitter,
};
use guards_core::{Nanos, Rng};

use crate::common::{self, hex_word, to_hex, Value};

/// A backoff config object (also the `backoff` of a retry policy's config); `null` or a
/// missing key takes the default.
pub fn config_of(c: &Value) -> BackoffConfig {
    let d = BackoffConfig::default();
    BackoffConfig {
        base: common::opt_nanos(c, "base").unwrap_or(d.base),
        cap: common::opt_nanos(c, "cap").unwrap_or(d.cap),
        multiplier: common::opt_f64(c, "multiplier").unwrap_or(d.multiplier),
        jitter: c
            .get("jitter")
            .map(|j| {
                Jitter::from_name(j.as_str().expect("jitter is a string"))
                    .unwrap_or_else(|| panic!("unknown jitter {j}"))
            })
            .unwrap_or(d.jitter),
    }
}

fn retry(step: &Value) -> u32 {
    u32::try_from(common::u64_of(step, "retry")).expect("retry fits in u32")
}

fn prev(step: &Value) -> Nanos {
    common::opt_nanos(step, "prev").unwrap_or(Nanos::ZERO)
}

fn run_step(b: &Backoff, rng: &Rng, step: &Value) -> Value {
    let op = common::str_of(step, "op");
    match op {
        "ceiling" => b.ceiling(retry(step)).0.into(),
        "max_delay" => b.max_delay(retry(step)).0.into(),
        "delay" => b.delay(retry(step), prev(step), rng).0.into(),
        "delay_from_bits" => b
            .delay_from_bits(retry(step), prev(step), hex_word(step, "bits"))
            .0
            .into(),
        "rng_next_u64" => to_hex(rng.next_u64()),
        "fnv1a64" => to_hex(fnv1a64(common::str_of(step, "id").as_bytes())),
        "stable_offset" => stable_offset(
            common::str_of(step, "id").as_bytes(),
            Nanos(common::u64_of(step, "period")),
        )
        .0
        .into(),
        "next_stable_run" => next_stable_run(
            common::str_of(step, "id").as_bytes(),
            Nanos(common::u64_of(step, "period")),
            common::now(step),
        )
        .0
        .into(),
        other => panic!("unknown backoff op `{other}`"),
    }
}

#[test]
fn backoff_vectors() {
    common::replay(
        "backoff",
        |case| {
            Ok((
                Backoff::new(config_of(&case["config"]))?,
                common::case_rng(case),
            ))
        },
        |(b, rng), _, step| run_step(b, rng, step),
    );
}
