//! `guards.Priority`: the named priority classes. Anywhere a priority is taken, any int
//! in `0..=7` is accepted; lower is more important.

use guards_core::priority::MAX_PRIORITIES;
use guards_core::Priority as CorePriority;
use pyo3::prelude::*;

/// Named priority classes (ints; 0 is the most important, up to 7).
#[pyclass(module = "guards", name = "Priority", frozen)]
#[derive(Debug)]
pub struct PyPriority;

#[pymethods]
impl PyPriority {
    /// Never shed before anything else (health checks, checkouts).
    #[classattr]
    const CRITICAL_PLUS: u8 = CorePriority::CRITICAL_PLUS.level();
    /// Important production traffic (the default).
    #[classattr]
    const CRITICAL: u8 = CorePriority::CRITICAL.level();
    /// Traffic that tolerates some shedding.
    #[classattr]
    const SHEDDABLE_PLUS: u8 = CorePriority::SHEDDABLE_PLUS.level();
    /// Traffic shed first (batch, prefetch).
    #[classattr]
    const SHEDDABLE: u8 = CorePriority::SHEDDABLE.level();
    /// How many classes there are (valid classes are `0..COUNT`).
    #[classattr]
    const COUNT: usize = MAX_PRIORITIES;
}
