//! `guards.Nanos`: an exact duration in integer nanoseconds, accepted wherever a duration
//! is (next to seconds as `float`/`int` and `datetime.timedelta`). Useful when a duration
//! must be exact to the nanosecond (seconds as a float round to the nearest nanosecond).

use pyo3::prelude::*;

use crate::util::{self, Ctx};

/// An exact duration: `Nanos(1_500)` is 1.5 µs.
#[pyclass(module = "guards", name = "Nanos", frozen, eq, ord, hash)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyNanos {
    pub(crate) ns: u64,
}

#[pymethods]
impl PyNanos {
    /// `Nanos(ns)`: `ns` integer nanoseconds, 0..=2**64-1.
    #[new]
    fn new(ns: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyNanos {
            ns: util::get_u64("ns", ns, Ctx::Arg)?,
        })
    }

    /// The duration from seconds (`float`/`int`) or a `datetime.timedelta`, rounded to the
    /// nearest nanosecond.
    #[staticmethod]
    fn from_seconds(seconds: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyNanos {
            ns: util::get_duration("seconds", seconds, Ctx::Arg)?.as_u64(),
        })
    }

    /// Integer nanoseconds.
    #[getter]
    fn ns(&self) -> u64 {
        self.ns
    }

    /// Seconds as a float.
    #[getter]
    fn seconds(&self) -> f64 {
        util::secs(guards_core::Nanos(self.ns))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyType>, (u64,))> {
        Ok((slf.get_type(), (slf.get().ns,)))
    }

    fn __int__(&self) -> u64 {
        self.ns
    }

    fn __repr__(&self) -> String {
        format!("Nanos({})", self.ns)
    }

    fn __str__(&self) -> String {
        guards_core::Nanos(self.ns).to_string()
    }
}
