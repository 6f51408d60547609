//! `_VectorSession`: the shared conformance-vector interpreter (ffi's `guards::vectors`)
//! driven from Python, so that the vector files run through the Python API. Test-only:
//! not re-exported by the `guards` package.
//!
//! The session reads the files, walks them case by case and hands out one step at a time
//! (`next()`); a Python backend (`python/tests/vectors/`) runs it through the public
//! classes and replies (`submit_result`, `submit_config_error`, `submit_failed`,
//! `submit_unsupported`); the session compares, keeps permits by handle and writes the
//! same report as the Rust, C and Node backends. The protocol is `tests/vectors/README.md`'s.
//!
//! Values: an argument is `None`, a `bool`, an `int`, a `float`, a `str` or `bytes`. A
//! result is a Python value: `int` (never equal to a float), `float`, `str`, `bool`,
//! `None`, `bytes`, lists/tuples and dicts (string keys) of those; `...` (`Ellipsis`)
//! marks a value the Python API cannot observe (counted as unobserved, never as equal).

use guards::vectors::{CaseOutcome, Entry, Record, Reply, Role, Scalar, Session};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A replay of conformance-vector files, one step at a time (for binding tests).
#[pyclass(module = "guards._guards", name = "_VectorSession", unsendable)]
pub struct PyVectorSession {
    s: Session,
}

fn scalar<'py>(py: Python<'py>, s: &Scalar) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s {
        Scalar::Null => py.None().into_bound(py),
        Scalar::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Float(f) => PyFloat::new(py, *f).into_any(),
        Scalar::Str(t) => PyString::new(py, t).into_any(),
        Scalar::Bytes(b) => PyBytes::new(py, b).into_any(),
    })
}

/// Flatten Python result `v` into `r` under `path`.
fn record(v: &Bound<'_, PyAny>, path: String, r: &mut Record, depth: usize) -> PyResult<()> {
    if depth > 32 {
        return Err(PyValueError::new_err(
            "_VectorSession: a result nested more than 32 deep",
        ));
    }
    let py = v.py();
    let put = |r: &mut Record, s: Scalar| {
        r.put(path.clone(), Entry::Value(s));
    };
    if v.is_none() {
        put(r, Scalar::Null);
    } else if v.is(py.Ellipsis()) {
        r.put(path, Entry::Unobservable);
    } else if let Ok(b) = v.cast::<PyBool>() {
        put(r, Scalar::Bool(b.is_true()));
    } else if v.is_instance_of::<PyInt>() {
        let i: i128 = v.extract().map_err(|_| {
            PyValueError::new_err("_VectorSession: an integer result beyond 128 bits")
        })?;
        put(r, Scalar::Int(i));
    } else if let Ok(f) = v.cast::<PyFloat>() {
        put(r, Scalar::Float(f.value()));
    } else if let Ok(s) = v.cast::<PyString>() {
        put(r, Scalar::Str(s.to_str()?.to_owned()));
    } else if let Ok(b) = v.cast::<PyBytes>() {
        put(r, Scalar::Bytes(b.as_bytes().to_vec()));
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
        if items.is_empty() {
            r.put(path.clone(), Entry::EmptyList);
        }
        for (i, item) in items.iter().enumerate() {
            record(item, format!("{path}[{i}]"), r, depth + 1)?;
        }
    } else if let Ok(d) = v.cast::<PyDict>() {
        if d.is_empty() {
            r.put(path.clone(), Entry::EmptyObject);
        }
        for (k, item) in d.iter() {
            let k: String = k.extract().map_err(|_| {
                PyTypeError::new_err("_VectorSession: a result's dict keys must be strings")
            })?;
            let p = if path.is_empty() {
                k
            } else {
                format!("{path}.{k}")
            };
            record(&item, p, r, depth + 1)?;
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "_VectorSession: a result cannot hold {} (use None, int, float, str, bool, bytes, \
             lists and dicts of those, or ... for an unobservable value)",
            v.get_type().name()?
        )));
    }
    Ok(())
}

fn put<'py>(d: &Bound<'py, PyDict>, k: &str, v: impl IntoPyObject<'py>) -> PyResult<()> {
    d.set_item(k, v)
}

#[pymethods]
impl PyVectorSession {
    /// A session over `path`: one vector file, or every `*.json` file of a directory in
    /// name order.
    #[staticmethod]
    fn open(path: &str) -> PyResult<Self> {
        Session::open(path)
            .map(|s| PyVectorSession { s })
            .map_err(|e| PyValueError::new_err(format!("_VectorSession: {path}: {e}")))
    }

    /// A session over one vector file given as text (`file_name`: `<guard>.json`).
    #[staticmethod]
    fn from_text(file_name: &str, text: &str) -> Self {
        PyVectorSession {
            s: Session::from_text(file_name, text),
        }
    }

    /// The next step, `{"guard", "op", "args": {name: value}, "origin": {"file", "case",
    /// "step", "repetition", "role"}}`, or `None` when every file has been replayed. The
    /// same step comes back until it is answered.
    fn next<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(step) = self.s.next_step() else {
            return Ok(None);
        };
        let o = PyDict::new(py);
        put(&o, "guard", step.guard)?;
        put(&o, "op", step.op)?;
        let a = PyDict::new(py);
        for (name, v) in step.args.iter() {
            a.set_item(name, scalar(py, v)?)?;
        }
        put(&o, "args", a)?;
        let origin = PyDict::new(py);
        put(&origin, "file", step.origin.file.as_str())?;
        put(&origin, "case", step.origin.case.as_str())?;
        put(&origin, "step", step.origin.step)?;
        put(&origin, "repetition", step.origin.repetition)?;
        let role = match step.origin.role {
            Role::Build => "build",
            Role::Op => "op",
            Role::Release => "release",
            Role::Free => "free",
        };
        put(&origin, "role", role)?;
        put(&o, "origin", origin)?;
        Ok(Some(o))
    }

    /// Answer the step with its result (see the module docs for the values).
    fn submit_result(&mut self, result: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut r = Record::new();
        record(result, String::new(), &mut r, 0)?;
        self.submit(Reply::Result(r))
    }

    /// Answer `new` with a refused config: the field (as the schema names it) and the kind.
    fn submit_config_error(&mut self, field: String, kind: String) -> PyResult<()> {
        self.submit(Reply::ConfigError { field, kind })
    }

    /// Answer: the op could not run (the case fails).
    fn submit_failed(&mut self, message: String) -> PyResult<()> {
        self.submit(Reply::Failed(message))
    }

    /// Answer: the Python API does not have this guard or op (the case is reported as not
    /// covered from this step on, never as passed).
    fn submit_unsupported(&mut self, reason: String) -> PyResult<()> {
        self.submit(Reply::Unsupported(reason))
    }

    /// Whether every file has been replayed.
    #[getter]
    fn done(&self) -> bool {
        self.s.is_done()
    }

    /// The report: a line per file, then every failure in full.
    fn report(&self) -> String {
        self.s.report().to_string()
    }

    /// The counts: `{"files", "cases", "passed", "partly_observed", "failed",
    /// "not_covered", "file_errors", "compared", "unobserved", "ok"}`.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.s.report().summary();
        let o = PyDict::new(py);
        put(&o, "files", s.files)?;
        put(&o, "cases", s.cases)?;
        put(&o, "passed", s.passed)?;
        put(&o, "partly_observed", s.partly_observed)?;
        put(&o, "failed", s.failed)?;
        put(&o, "not_covered", s.not_covered)?;
        put(&o, "file_errors", s.file_errors)?;
        put(&o, "compared", s.compared)?;
        put(&o, "unobserved", s.unobserved)?;
        put(&o, "ok", s.ok())?;
        Ok(o)
    }

    /// Every case: `{"file", "case", "outcome": "passed" | "failed" | "not_covered" |
    /// "file_error", "compared"?, "unobserved"?, "op"?, "reason"?}`.
    fn cases<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for f in &self.s.report().files {
            if let Some(e) = &f.error {
                let o = PyDict::new(py);
                put(&o, "file", f.file.as_str())?;
                put(&o, "case", py.None())?;
                put(&o, "outcome", "file_error")?;
                put(&o, "reason", e.as_str())?;
                out.push(o);
            }
            for c in &f.cases {
                let o = PyDict::new(py);
                put(&o, "file", f.file.as_str())?;
                put(&o, "case", c.name.as_str())?;
                match &c.outcome {
                    CaseOutcome::Passed {
                        compared,
                        unobserved,
                    } => {
                        put(&o, "outcome", "passed")?;
                        put(&o, "compared", *compared)?;
                        put(&o, "unobserved", *unobserved)?;
                    }
                    CaseOutcome::Failed(m) => {
                        put(&o, "outcome", "failed")?;
                        put(&o, "op", m.op.as_str())?;
                        put(&o, "reason", m.detail.as_str())?;
                    }
                    CaseOutcome::NotCovered { op, reason, .. } => {
                        put(&o, "outcome", "not_covered")?;
                        put(&o, "op", op.as_str())?;
                        put(&o, "reason", reason.as_str())?;
                    }
                    CaseOutcome::FileError(e) => {
                        put(&o, "outcome", "file_error")?;
                        put(&o, "reason", e.as_str())?;
                    }
                }
                out.push(o);
            }
        }
        Ok(out)
    }
}

impl std::fmt::Debug for PyVectorSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("_VectorSession")
            .field("done", &self.s.is_done())
            .finish_non_exhaustive()
    }
}

impl PyVectorSession {
    fn submit(&mut self, reply: Reply) -> PyResult<()> {
        self.s
            .submit(reply)
            .map_err(|e| PyRuntimeError::new_err(format!("_VectorSession: {e}")))
    }
}

/// Set `_VectorSession` on the module without adding it to `__all__` (so `guards` does not
/// re-export it: it is for the binding's tests).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.setattr("_VectorSession", m.py().get_type::<PyVectorSession>())
}
