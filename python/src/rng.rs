//! `guards.Rng`: core's lock-free SplitMix64 generator, so that Python can seed the
//! randomness of backoff jitter and retry decisions (tests, simulations, replays).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use guards_core::Rng as CoreRng;
use pyo3::prelude::*;

use crate::util::{self, Ctx};

/// A seed from the process's hash randomness, different on every call.
pub(crate) fn random_seed() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// A seeded SplitMix64 generator, safe to share between threads (each draw is one atomic
/// add). The same seed gives the same sequence in every language guards supports.
#[pyclass(module = "guards", name = "Rng", frozen)]
#[derive(Debug)]
pub struct PyRng {
    pub(crate) rng: CoreRng,
}

/// A `seed` setting: an int in 0..=2**64-1 (`ConfigError` naming `seed` outside it), or
/// `None` (or left out) for a random seed.
pub(crate) fn seed_arg(seed: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    match util::given(seed) {
        Some(s) => util::get_uint("seed", s, Ctx::Config, u64::MAX, "an int in 0 to 2**64-1"),
        None => Ok(random_seed()),
    }
}

impl PyRng {
    /// A generator from an optional seed argument (random when absent).
    pub(crate) fn from_seed_arg(seed: Option<&Bound<'_, PyAny>>) -> PyResult<CoreRng> {
        Ok(CoreRng::new(seed_arg(seed)?))
    }
}

#[pymethods]
impl PyRng {
    /// `Rng(seed=None)`: seeded with `seed` (0..=2**64-1), or randomly when `None`.
    #[new]
    #[pyo3(signature = (seed = None))]
    fn new(seed: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(PyRng {
            rng: Self::from_seed_arg(seed)?,
        })
    }

    /// Restart the sequence from `seed`.
    fn reseed(&self, seed: &Bound<'_, PyAny>) -> PyResult<()> {
        self.rng.reseed(seed_arg(Some(seed))?);
        Ok(())
    }

    /// The next 64-bit word.
    fn next_u64(&self) -> u64 {
        self.rng.next_u64()
    }

    /// The next float in `[0, 1)`.
    fn next_f64(&self) -> f64 {
        self.rng.next_f64()
    }

    /// A uniform integer in `0..n` (0 when `n` is 0).
    fn below(&self, n: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(self.rng.below(util::get_u64("n", n, Ctx::Arg)?))
    }

    fn __repr__(&self) -> String {
        "Rng(...)".to_owned()
    }
}
