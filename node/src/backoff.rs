//! `Backoff`: capped exponential backoff with jitter; stable offsets for periodic work.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::{BuildInPlace, InPlace};
use guards::names::{BackoffConfig, ConfigError};
use guards::schema;
use guards_core::backoff::{
    next_stable_run as core_next_stable_run, stable_offset as core_stable_offset,
    Backoff as CoreBackoff,
};
use guards_core::Rng;

use crate::args;
use crate::convert::{big, ms, Options};
use crate::errors::config_failure;
use crate::shared::{self, Placed};

const CLASS: &str = "Backoff";

/// A backoff and its jitter generator, placed together.
#[repr(C)]
pub(crate) struct BackoffState {
    b: CoreBackoff,
    rng: Rng,
}

/// A backoff config and the seed of its generator.
pub(crate) type BackoffSeed = (BackoffConfig, u64);

impl BuildInPlace for BackoffState {
    type Config = BackoffSeed;
    fn reset_in_place(
        &mut self,
        (config, seed): BackoffSeed,
    ) -> std::result::Result<(), ConfigError> {
        self.b = CoreBackoff::new(config)?;
        self.rng = Rng::new(seed);
        Ok(())
    }
}

fn read_config(env: &Env, options: Option<Unknown<'_>>) -> Result<(BackoffSeed, u64)> {
    let mut o = Options::read(env, CLASS, options)?;
    let seed = match o.take("seed") {
        None => crate::retry_policy::fresh_seed(0xD1B5_4A32_D192_ED03),
        Some((camel, v)) => crate::convert::whole(env, CLASS, &camel, &v, u64::MAX)?,
    };
    let c = o.build(env, &schema::BACKOFF, "")?;
    CoreBackoff::new(c).map_err(|e| config_failure(env, CLASS, "", &e.into()))?;
    Ok(((c, seed), 0))
}

fn retry_arg(env: &Env, v: &Unknown<'_>) -> Result<u32> {
    args::whole_u32(env, "retry", v)
}

/// Backoff delays: retry `n` waits a jittered `min(cap, base × multiplier^n)`. Shareable
/// by worker threads (`Backoff.shared`: its jitter generator).
#[napi]
pub struct Backoff {
    s: InPlace<BackoffState>,
    _mem: Option<Uint8Array>,
}

#[napi]
impl Backoff {
    /// A backoff with `options` (`base`, `cap`, `multiplier`, `jitter`: `'none'`,
    /// `'full'`, `'equal'`, `'decorrelated'`; `seed` for the jitter). With `shared`: built
    /// in or attached to a `SharedArrayBuffer` (see `CircuitBreaker`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: BackoffOptions & { seed?: number | bigint }, shared?: Uint8Array"
    )]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        shared: Option<Unknown<'_>>,
    ) -> Result<Self> {
        let mem = crate::convert::shared_arg(&env, shared)?;
        let given = !args::absent(&options);
        let Placed { g, mem } =
            shared::place::<InPlace<BackoffState>>(&env, CLASS, mem, given, || {
                read_config(&env, options)
            })?;
        Ok(Backoff { s: g, _mem: mem })
    }

    /// Bytes a `SharedArrayBuffer` needs to hold a backoff.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: BackoffOptions & { seed?: number | bigint }"
    )]
    pub fn shared_size(env: Env, options: Option<Unknown<'_>>) -> Result<u32> {
        shared::size_for::<InPlace<BackoffState>>(&env, CLASS, || read_config(&env, options))
    }

    /// The wait before retry `retry` (0 for the first retry: `base`), in ms; `prevDelay`
    /// (the previous wait, ms or exact ns as a bigint) is used by decorrelated jitter.
    #[napi(
        catch_unwind,
        ts_args_type = "retry: number, prevDelay?: number | bigint"
    )]
    pub fn delay_ms(
        &self,
        env: Env,
        retry: Unknown<'_>,
        prev_delay: Option<Unknown<'_>>,
    ) -> Result<f64> {
        let r = retry_arg(&env, &retry)?;
        let prev =
            args::opt_duration(&env, "prevDelay", prev_delay)?.unwrap_or(guards::names::Nanos(0));
        Ok(ms(self.s.b.delay(r, prev, &self.s.rng)))
    }

    /// The next word of the jitter generator (the word `delayMs` would draw next), as a
    /// bigint: record it, and `delayFromBitsMs` gives (and later replays) the wait it
    /// makes. The same seed gives the same words in every language.
    #[napi(catch_unwind)]
    pub fn next_u64(&self) -> BigInt {
        BigInt::from(self.s.rng.next_u64())
    }

    /// The wait before retry `retry` when the jitter draws `bits` (a word of the generator,
    /// see `nextU64`), in ms; `prevDelay` as for `delayMs`.
    #[napi(
        catch_unwind,
        ts_args_type = "retry: number, bits: bigint, prevDelay?: number | bigint"
    )]
    pub fn delay_from_bits_ms(
        &self,
        env: Env,
        retry: Unknown<'_>,
        bits: Unknown<'_>,
        prev_delay: Option<Unknown<'_>>,
    ) -> Result<f64> {
        let r = retry_arg(&env, &retry)?;
        let bits = args::whole(&env, "bits", &bits, u64::MAX)?;
        let prev =
            args::opt_duration(&env, "prevDelay", prev_delay)?.unwrap_or(guards::names::Nanos(0));
        Ok(ms(self.s.b.delay_from_bits(r, prev, bits)))
    }

    /// The ceiling before jitter for retry `retry`, in ms.
    #[napi(catch_unwind, ts_args_type = "retry: number")]
    pub fn ceiling_ms(&self, env: Env, retry: Unknown<'_>) -> Result<f64> {
        Ok(ms(self.s.b.ceiling(retry_arg(&env, &retry)?)))
    }

    /// The longest wait retry `retry` can get with this jitter, in ms.
    #[napi(catch_unwind, ts_args_type = "retry: number")]
    pub fn max_delay_ms(&self, env: Env, retry: Unknown<'_>) -> Result<f64> {
        Ok(ms(self.s.b.max_delay(retry_arg(&env, &retry)?)))
    }
}

/// A stable offset in `0..period` (ms, or exact ns as a bigint) for periodic work `id`,
/// in ms: the same in every process and language, so a fleet's starts spread over the
/// period.
#[napi(catch_unwind, ts_args_type = "id: string, period: number | bigint")]
pub fn stable_offset_ms(env: Env, id: Unknown<'_>, period: Unknown<'_>) -> Result<f64> {
    let id = args::string(&env, "id", &id)?;
    let p = args::duration(&env, "period", &period)?;
    Ok(ms(core_stable_offset(id.as_bytes(), p)))
}

/// The next instant after `now` at which periodic work `id` with `period` (ms, or exact
/// ns as a bigint) runs: its stable offset plus a whole number of periods (bigint ns).
#[napi(
    catch_unwind,
    ts_args_type = "id: string, period: number | bigint, now?: bigint"
)]
pub fn next_stable_run(
    env: Env,
    id: Unknown<'_>,
    period: Unknown<'_>,
    now: Option<Unknown<'_>>,
) -> Result<BigInt> {
    let id = args::string(&env, "id", &id)?;
    let p = args::duration(&env, "period", &period)?;
    let now = args::now(&env, now)?;
    Ok(big(core_next_stable_run(id.as_bytes(), p, now)))
}
