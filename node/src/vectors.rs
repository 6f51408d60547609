//! `VectorSession`: the shared conformance-vector interpreter (`guards::vectors`) driven
//! from JavaScript, so that the vector files run through the Node API.
//!
//! The session reads the files, walks them case by case and hands out one step at a time
//! (`next()`); a JavaScript backend (`node/test/vectors/`) runs it through the public
//! classes and replies (`submitResult`, `submitConfigError`, `submitFailed`,
//! `submitUnsupported`); the session compares, keeps permits by handle, and writes the
//! same report as the Rust and C backends. The protocol is `tests/vectors/README.md`'s.
//!
//! Values: an argument that is an integer comes as a `bigint`, a float as a number,
//! bytes as a `Buffer`. A result is a JavaScript value: a `bigint` is an integer, a number
//! a float (the two never compare equal), a string, a boolean, `null`, a `Uint8Array` of
//! bytes, arrays and plain objects of those; a symbol marks a value the Node API cannot
//! observe (counted as unobserved, never as equal).

use napi::bindgen_prelude::*;
use napi::ValueType;
use napi_derive::napi;

use guards::vectors::{CaseOutcome, Entry, Record, Reply, Role, Scalar, Session, Summary};

use crate::args;
use crate::errors::{internal, range_error, type_error};

/// A replay of conformance-vector files, one step at a time (for binding tests).
#[napi]
pub struct VectorSession {
    s: Session,
}

fn int_value<'e>(env: &'e Env, i: i128) -> Result<Unknown<'e>> {
    let b = if let Ok(u) = u64::try_from(i) {
        BigInt::from(u)
    } else if let Ok(s) = i64::try_from(i) {
        BigInt::from(s)
    } else {
        BigInt {
            sign_bit: i < 0,
            words: {
                let m = i.unsigned_abs();
                vec![m as u64, (m >> 64) as u64]
            },
        }
    };
    // SAFETY: `env` is live; the value is created in it.
    unsafe {
        let raw = BigInt::to_napi_value(env.raw(), b)?;
        Ok(Unknown::from_raw_unchecked(env.raw(), raw))
    }
}

fn scalar_value<'e>(env: &'e Env, s: &Scalar) -> Result<Unknown<'e>> {
    // SAFETY: `env` is live and each value (every arm) is created in it.
    unsafe {
        let raw = match s {
            Scalar::Null => Null::to_napi_value(env.raw(), Null)?,
            Scalar::Bool(b) => bool::to_napi_value(env.raw(), *b)?,
            Scalar::Int(i) => return int_value(env, *i),
            Scalar::Float(f) => f64::to_napi_value(env.raw(), *f)?,
            Scalar::Str(t) => String::to_napi_value(env.raw(), t.clone())?,
            Scalar::Bytes(b) => Buffer::to_napi_value(env.raw(), Buffer::from(b.clone()))?,
        };
        Ok(Unknown::from_raw_unchecked(env.raw(), raw))
    }
}

/// Flatten JavaScript result `v` into `r` under `path`.
fn record(env: &Env, v: &Unknown<'_>, path: String, r: &mut Record, depth: usize) -> Result<()> {
    if depth > 32 {
        return Err(range_error(
            env,
            "result",
            "VectorSession: a result nested more than 32 deep",
        ));
    }
    let put = |r: &mut Record, s: Scalar| {
        r.put(path.clone(), Entry::Value(s));
    };
    match v.get_type()? {
        ValueType::Null => put(r, Scalar::Null),
        ValueType::Boolean => put(r, Scalar::Bool(args::boolean(env, "result", v)?)),
        ValueType::Number => put(r, Scalar::Float(args::number(env, "result", v)?)),
        ValueType::String => put(r, Scalar::Str(args::string(env, "result", v)?)),
        ValueType::BigInt => {
            // SAFETY: checked to be a bigint.
            let b = unsafe { v.cast::<BigInt>() }?;
            let (i, lossless) = b.get_i128();
            if !lossless {
                return Err(range_error(
                    env,
                    "result",
                    "VectorSession: an integer result beyond 128 bits",
                ));
            }
            put(r, Scalar::Int(i));
        }
        ValueType::Symbol => {
            r.put(path, Entry::Unobservable);
        }
        ValueType::Object => {
            if v.is_typedarray()? {
                let bytes = args::header_bytes(env, "result", v)?;
                put(r, Scalar::Bytes(bytes));
            } else if v.is_array()? {
                // SAFETY: checked to be an array.
                let a = unsafe { v.cast::<Array<'_>>() }?;
                if a.len() == 0 {
                    r.put(path.clone(), Entry::EmptyList);
                }
                for i in 0..a.len() {
                    let item = a
                        .get::<Unknown<'_>>(i)?
                        .ok_or_else(|| internal(env, "array element"))?;
                    record(env, &item, format!("{path}[{i}]"), r, depth + 1)?;
                }
            } else {
                // SAFETY: checked to be an object.
                let o = unsafe { v.cast::<Object<'_>>() }?;
                let keys = Object::keys(&o)?;
                if keys.is_empty() {
                    r.put(path.clone(), Entry::EmptyObject);
                }
                for k in keys {
                    let item = o
                        .get::<Unknown<'_>>(&k)?
                        .ok_or_else(|| internal(env, "object value"))?;
                    let p = if path.is_empty() {
                        k
                    } else {
                        format!("{path}.{k}")
                    };
                    record(env, &item, p, r, depth + 1)?;
                }
            }
        }
        _ => {
            return Err(type_error(
                env,
                "result",
                &format!(
                    "VectorSession: a result cannot hold {} (use null, a bigint for an integer, a number for a float, a symbol for an unobservable value)",
                    args::what(v)
                ),
            ))
        }
    }
    Ok(())
}

fn summary_object<'e>(env: &'e Env, s: &Summary) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    o.set("files", s.files as u32)?;
    o.set("cases", s.cases as u32)?;
    o.set("passed", s.passed as u32)?;
    o.set("partlyObserved", s.partly_observed as u32)?;
    o.set("failed", s.failed as u32)?;
    o.set("notCovered", s.not_covered as u32)?;
    o.set("fileErrors", s.file_errors as u32)?;
    o.set("compared", s.compared as u32)?;
    o.set("unobserved", s.unobserved as u32)?;
    o.set("ok", s.ok())?;
    Ok(o)
}

#[napi]
impl VectorSession {
    /// A session over `path`: one vector file, or every `*.json` file of a directory in
    /// name order.
    #[napi(factory, catch_unwind, ts_args_type = "path: string")]
    pub fn open(env: Env, path: Unknown<'_>) -> Result<VectorSession> {
        let p = args::string(&env, "path", &path)?;
        Session::open(&p)
            .map(|s| VectorSession { s })
            .map_err(|e| type_error(&env, "path", &format!("VectorSession: {p}: {e}")))
    }

    /// A session over one vector file given as text (`fileName`: `<guard>.json`).
    #[napi(factory, catch_unwind, ts_args_type = "fileName: string, text: string")]
    pub fn from_text(env: Env, file_name: Unknown<'_>, text: Unknown<'_>) -> Result<VectorSession> {
        let name = args::string(&env, "fileName", &file_name)?;
        let text = args::string(&env, "text", &text)?;
        Ok(VectorSession {
            s: Session::from_text(&name, &text),
        })
    }

    /// The next step, `{ guard, op, args, origin: { file, case, step, repetition, role }
    /// }`, or `null` when every file has been replayed. The same step comes back until
    /// it is answered.
    #[napi(catch_unwind, ts_return_type = "VectorStep | null")]
    pub fn next<'e>(&mut self, env: &'e Env) -> Result<Option<Object<'e>>> {
        let Some(step) = self.s.next_step() else {
            return Ok(None);
        };
        let mut o = Object::new(env)?;
        o.set("guard", step.guard)?;
        o.set("op", step.op)?;
        let mut a = Object::new(env)?;
        for (name, v) in step.args.iter() {
            a.set(name, scalar_value(env, v)?)?;
        }
        o.set("args", a)?;
        let mut origin = Object::new(env)?;
        origin.set("file", step.origin.file.as_str())?;
        origin.set("case", step.origin.case.as_str())?;
        origin.set("step", step.origin.step.map(|s| s as u32))?;
        origin.set("repetition", step.origin.repetition as f64)?;
        origin.set(
            "role",
            match step.origin.role {
                Role::Build => "build",
                Role::Op => "op",
                Role::Release => "release",
                Role::Free => "free",
            },
        )?;
        o.set("origin", origin)?;
        Ok(Some(o))
    }

    fn submit(&mut self, env: &Env, reply: Reply) -> Result<()> {
        self.s
            .submit(reply)
            .map_err(|e| type_error(env, "reply", &format!("VectorSession: {e}")))
    }

    /// Answer the step with its result (see the module docs for the values).
    #[napi(catch_unwind, ts_args_type = "result: VectorResult")]
    pub fn submit_result(&mut self, env: Env, result: Unknown<'_>) -> Result<()> {
        let mut r = Record::new();
        record(&env, &result, String::new(), &mut r, 0)?;
        self.submit(&env, Reply::Result(r))
    }

    /// Answer `new` with a refused config: the field (as the schema names it) and the kind
    /// (`not_finite`, `negative`, `zero`, `out_of_range`, `inconsistent`, `unknown_field`,
    /// `wrong_type`).
    #[napi(catch_unwind, ts_args_type = "field: string, kind: string")]
    pub fn submit_config_error(
        &mut self,
        env: Env,
        field: Unknown<'_>,
        kind: Unknown<'_>,
    ) -> Result<()> {
        let field = args::string(&env, "field", &field)?;
        let kind = args::string(&env, "kind", &kind)?;
        self.submit(&env, Reply::ConfigError { field, kind })
    }

    /// Answer: the op could not run (the case fails).
    #[napi(catch_unwind, ts_args_type = "message: string")]
    pub fn submit_failed(&mut self, env: Env, message: Unknown<'_>) -> Result<()> {
        let m = args::string(&env, "message", &message)?;
        self.submit(&env, Reply::Failed(m))
    }

    /// Answer: the Node API does not have this guard or op (the case is reported as not
    /// covered from this step on, never as passed).
    #[napi(catch_unwind, ts_args_type = "reason: string")]
    pub fn submit_unsupported(&mut self, env: Env, reason: Unknown<'_>) -> Result<()> {
        let m = args::string(&env, "reason", &reason)?;
        self.submit(&env, Reply::Unsupported(m))
    }

    /// Whether every file has been replayed.
    #[napi(getter, catch_unwind)]
    pub fn done(&self) -> bool {
        self.s.is_done()
    }

    /// The report: a line per file, then every failure in full.
    #[napi(catch_unwind)]
    pub fn report(&self) -> String {
        self.s.report().to_string()
    }

    /// The counts: `{ files, cases, passed, partlyObserved, failed, notCovered,
    /// fileErrors, compared, unobserved, ok }`.
    #[napi(catch_unwind, ts_return_type = "VectorSummary")]
    pub fn summary<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        summary_object(env, &self.s.report().summary())
    }

    /// Every case: `{ file, case, outcome: 'passed' | 'failed' | 'not_covered' |
    /// 'file_error', compared?, unobserved?, op?, reason? }`.
    #[napi(catch_unwind, ts_return_type = "VectorCase[]")]
    pub fn cases<'e>(&self, env: &'e Env) -> Result<Vec<Object<'e>>> {
        let mut out = Vec::new();
        for f in &self.s.report().files {
            if let Some(e) = &f.error {
                let mut o = Object::new(env)?;
                o.set("file", f.file.as_str())?;
                o.set("case", Null)?;
                o.set("outcome", "file_error")?;
                o.set("reason", e.as_str())?;
                out.push(o);
            }
            for c in &f.cases {
                let mut o = Object::new(env)?;
                o.set("file", f.file.as_str())?;
                o.set("case", c.name.as_str())?;
                match &c.outcome {
                    CaseOutcome::Passed {
                        compared,
                        unobserved,
                    } => {
                        o.set("outcome", "passed")?;
                        o.set("compared", *compared as u32)?;
                        o.set("unobserved", *unobserved as u32)?;
                    }
                    CaseOutcome::Failed(m) => {
                        o.set("outcome", "failed")?;
                        o.set("op", m.op.as_str())?;
                        o.set("reason", m.detail.as_str())?;
                    }
                    CaseOutcome::NotCovered { op, reason, .. } => {
                        o.set("outcome", "not_covered")?;
                        o.set("op", op.as_str())?;
                        o.set("reason", reason.as_str())?;
                    }
                    CaseOutcome::FileError(e) => {
                        o.set("outcome", "file_error")?;
                        o.set("reason", e.as_str())?;
                    }
                }
                out.push(o);
            }
        }
        Ok(out)
    }
}
