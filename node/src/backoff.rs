//! `Backoff`: capped exponential backoff with jitter; stable offsets for periodic work.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::schema;
use guards_core::backoff::{stable_offset as core_stable_offset, Backoff as CoreBackoff};
use guards_core::Rng;

use crate::convert::{duration_ms, ms, Options};
use crate::errors::config_failure;

const CLASS: &str = "Backoff";

/// Backoff delays: retry `n` waits a jittered `min(cap, base × multiplier^n)`.
#[napi]
pub struct Backoff {
    b: CoreBackoff,
    rng: Rng,
}

#[napi]
impl Backoff {
    /// A backoff with `options` (`base`, `cap`, `multiplier`, `jitter`: `'none'`,
    /// `'full'`, `'equal'`, `'decorrelated'`; `seed` for the jitter).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: BackoffOptions & { seed?: number | bigint }"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let mut o = Options::read(&env, CLASS, options)?;
        let seed = match o.take("seed") {
            None => guards::clock::now_ns() ^ 0xD1B5_4A32_D192_ED03,
            Some((camel, v)) => crate::convert::whole(&env, CLASS, &camel, &v, u64::MAX)?,
        };
        let c = o.build(&env, &schema::BACKOFF, "")?;
        let b = CoreBackoff::new(c).map_err(|e| config_failure(&env, CLASS, "", &e.into()))?;
        Ok(Backoff {
            b,
            rng: Rng::new(seed),
        })
    }

    /// The wait before retry `retry` (0 for the first retry: `base`), in ms; `prevDelayMs` (the
    /// previous wait) is used by decorrelated jitter.
    #[napi(catch_unwind)]
    pub fn delay_ms(&self, env: Env, retry: u32, prev_delay_ms: Option<f64>) -> Result<f64> {
        let prev = duration_ms(&env, "prevDelayMs", prev_delay_ms.unwrap_or(0.0))?;
        Ok(ms(self.b.delay(retry, prev, &self.rng)))
    }

    /// The ceiling before jitter for retry `retry`, in ms.
    #[napi]
    pub fn ceiling_ms(&self, retry: u32) -> f64 {
        ms(self.b.ceiling(retry))
    }
}

/// A stable offset in `0..periodMs` for periodic work `id`: the same in every process and
/// language, so a fleet's starts spread over the period.
#[napi(catch_unwind)]
pub fn stable_offset_ms(env: Env, id: String, period_ms: f64) -> Result<f64> {
    let p = duration_ms(&env, "periodMs", period_ms)?;
    Ok(ms(core_stable_offset(id.as_bytes(), p)))
}
