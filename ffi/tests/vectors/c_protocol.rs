//! A backend driven through the C ABI of the step protocol (`guards_vectors_*`), as a C,
//! Python-ctypes or any foreign driver would: steps are read with the argument getters
//! and results written with the setters. The backend itself is any Rust [`Backend`].

use std::ffi::{c_char, CStr, CString};
use std::path::Path;

use guards::error::{self, Failure, GuardsResult};
use guards::vectors::c_abi::*;
use guards::vectors::{Args, Backend, Entry, Origin, Reply, Role, Scalar, Step};
use guards_core::{ConfigError, ConfigErrorKind};

fn ok(rc: GuardsResult, what: &str) {
    assert_eq!(rc, GuardsResult::Ok, "{what}: {:?}", error::last());
}

/// A string the session handed out (valid until the next step).
fn text(p: *const c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: the session's strings are NUL-terminated and live until the next step.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
}

/// A C string for an argument.
fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A session opened through the C ABI, used by this thread only, freed on drop.
struct Session(*mut guards_vectors);

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: a session from `guards_vectors_open*`, freed once.
        unsafe { guards_vectors_free(self.0) }
    }
}

impl Session {
    fn open(path: &Path) -> Session {
        let p = c(path.to_str().unwrap());
        let mut v = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid output.
        ok(unsafe { guards_vectors_open(p.as_ptr(), &mut v) }, "open");
        Session(v)
    }

    fn open_text(file_name: &str, text: &str) -> Session {
        let name = c(file_name);
        let mut v = std::ptr::null_mut();
        // SAFETY: `text` is valid for `len` bytes; the name is NUL-terminated.
        let rc = unsafe {
            guards_vectors_open_text(name.as_ptr(), text.as_ptr().cast(), text.len(), &mut v)
        };
        ok(rc, "open_text");
        Session(v)
    }

    fn next(&self) -> guards_vectors_step {
        let mut s = std::mem::MaybeUninit::<guards_vectors_step>::uninit();
        // SAFETY: a live session; `s` is valid for writes.
        ok(
            unsafe { guards_vectors_next(self.0, s.as_mut_ptr()) },
            "next",
        );
        // SAFETY: written by the successful call above.
        unsafe { s.assume_init() }
    }

    fn arg_at(&self, i: usize) -> guards_vectors_arg {
        let mut a = guards_vectors_arg {
            name: std::ptr::null(),
            kind: 0,
        };
        // SAFETY: a live session; `a` is valid for writes.
        ok(
            unsafe { guards_vectors_arg_at(self.0, i, &mut a) },
            "arg_at",
        );
        a
    }

    fn kind(&self, name: &CStr) -> guards_vectors_kind {
        let mut k = guards_vectors_kind::Absent;
        // SAFETY: a live session, a NUL-terminated name, a valid output.
        ok(
            unsafe { guards_vectors_arg_kind(self.0, name.as_ptr(), &mut k) },
            "arg_kind",
        );
        k
    }

    fn u64(&self, name: &CStr) -> Result<u64, GuardsResult> {
        let mut x = 0;
        // SAFETY: a live session, a NUL-terminated name, a valid output.
        match unsafe { guards_vectors_arg_u64(self.0, name.as_ptr(), &mut x) } {
            GuardsResult::Ok => Ok(x),
            rc => Err(rc),
        }
    }

    fn i64(&self, name: &CStr) -> i64 {
        let mut x = 0;
        // SAFETY: a live session, a NUL-terminated name, a valid output.
        ok(
            unsafe { guards_vectors_arg_i64(self.0, name.as_ptr(), &mut x) },
            "i64",
        );
        x
    }

    fn f64(&self, name: &CStr) -> f64 {
        let mut x = 0.0;
        // SAFETY: a live session, a NUL-terminated name, a valid output.
        ok(
            unsafe { guards_vectors_arg_f64(self.0, name.as_ptr(), &mut x) },
            "f64",
        );
        x
    }

    fn bool(&self, name: &CStr) -> bool {
        let mut x = false;
        // SAFETY: a live session, a NUL-terminated name, a valid output.
        ok(
            unsafe { guards_vectors_arg_bool(self.0, name.as_ptr(), &mut x) },
            "bool",
        );
        x
    }

    fn bytes(&self, name: &CStr) -> Vec<u8> {
        let mut p: *const c_char = std::ptr::null();
        let mut n = 0usize;
        // SAFETY: a live session, a NUL-terminated name, valid outputs.
        ok(
            unsafe { guards_vectors_arg_str(self.0, name.as_ptr(), &mut p, &mut n) },
            "str",
        );
        // SAFETY: the session keeps `n` bytes and a NUL at `p` until the next step.
        let (bytes, nul) = unsafe { (std::slice::from_raw_parts(p.cast::<u8>(), n), *p.add(n)) };
        assert_eq!(nul, 0, "NUL-terminated");
        bytes.to_vec()
    }

    fn put(&self, path: &str, e: &Entry) {
        let p = c(path);
        let p = p.as_ptr();
        let v = self.0;
        let string = match e {
            Entry::Value(Scalar::Str(s)) => c(s),
            _ => CString::default(),
        };
        // SAFETY: a live session and NUL-terminated strings, for every setter.
        let rc = unsafe {
            match e {
                Entry::Value(Scalar::Null) => guards_vectors_result_null(v, p),
                Entry::Value(Scalar::Bool(b)) => guards_vectors_result_bool(v, p, *b),
                Entry::Value(Scalar::Int(i)) => match u64::try_from(*i) {
                    Ok(u) => guards_vectors_result_u64(v, p, u),
                    Err(_) => guards_vectors_result_i64(v, p, i64::try_from(*i).unwrap()),
                },
                Entry::Value(Scalar::Float(f)) => guards_vectors_result_f64(v, p, *f),
                Entry::Value(Scalar::Str(_)) => guards_vectors_result_str(v, p, string.as_ptr()),
                Entry::EmptyList => guards_vectors_result_empty_list(v, p),
                Entry::Unobservable => guards_vectors_result_unobservable(v, p),
                other => panic!("no C setter for {other:?}"),
            }
        };
        ok(rc, "result");
    }

    fn submit(&self, reply: &Reply) {
        let v = self.0;
        match reply {
            Reply::Result(r) => {
                for (path, e) in r.entries() {
                    self.put(path, e);
                }
                // SAFETY: a live session.
                ok(unsafe { guards_vectors_submit(v) }, "submit");
            }
            Reply::ConfigError { field, kind } => {
                // As a C driver does: the guard's call failed, recording this thread's
                // last failure; the driver passes its code on.
                let field: &'static str = Box::leak(field.clone().into_boxed_str());
                let f = match ConfigErrorKind::from_name(kind) {
                    Some(k) => Failure::from(ConfigError::new(field, k, "see the schema")),
                    None => {
                        let code = match kind.as_str() {
                            "unknown_field" => GuardsResult::ConfigUnknownField,
                            "wrong_type" => GuardsResult::ConfigWrongType,
                            _ => GuardsResult::ConfigInvalid,
                        };
                        Failure::argument(code, field, "see the schema")
                    }
                };
                error::set_last(f);
                // SAFETY: a live session.
                ok(
                    unsafe { guards_vectors_submit_failure(v, f.code as u32) },
                    "failure",
                );
            }
            Reply::Failed(_) => {
                // A failure the backend cannot name: a code without detail.
                error::set_last(Failure::code(GuardsResult::InvalidArgument));
                let code = GuardsResult::InvalidArgument as u32;
                // SAFETY: a live session.
                ok(unsafe { guards_vectors_submit_failure(v, code) }, "failure");
            }
            Reply::Unsupported(r) => {
                let r = c(r);
                // SAFETY: a live session and a NUL-terminated reason.
                ok(
                    unsafe { guards_vectors_submit_unsupported(v, r.as_ptr()) },
                    "unsupported",
                );
            }
        }
    }

    fn report(&self) -> String {
        // SAFETY: a live session; NULL with length 0 asks for the length.
        let n = unsafe { guards_vectors_report(self.0, std::ptr::null_mut(), 0) };
        let mut buf = vec![0 as c_char; n + 1];
        // SAFETY: `buf` is valid for `n + 1` bytes.
        let m = unsafe { guards_vectors_report(self.0, buf.as_mut_ptr(), buf.len()) };
        assert_eq!(m, n, "the report's length is stable");
        text(buf.as_ptr())
    }

    fn summary(&self) -> guards_vectors_summary {
        let mut s = guards_vectors_summary::default();
        // SAFETY: a live session and a valid output.
        ok(
            unsafe { guards_vectors_get_summary(self.0, &mut s) },
            "summary",
        );
        s
    }

    /// The step the session handed out, read back through the C getters only.
    fn read_step(&self, s: &guards_vectors_step) -> Step {
        let mut args = Args::new();
        for i in 0..s.arg_count {
            let a = self.arg_at(i);
            let name = text(a.name);
            let cname = c(&name);
            let kind = self.kind(&cname);
            assert_eq!(kind as u32, a.kind, "arg_at and arg_kind agree on `{name}`");
            let value = match kind {
                guards_vectors_kind::Absent => panic!("`{name}` listed but absent"),
                guards_vectors_kind::Null => Scalar::Null,
                guards_vectors_kind::Bool => Scalar::Bool(self.bool(&cname)),
                guards_vectors_kind::Int => match self.u64(&cname) {
                    Ok(u) => Scalar::Int(i128::from(u)),
                    Err(rc) => {
                        assert_eq!(rc, GuardsResult::ConfigNegative, "`{name}`");
                        Scalar::Int(i128::from(self.i64(&cname)))
                    }
                },
                guards_vectors_kind::Float => Scalar::Float(self.f64(&cname)),
                guards_vectors_kind::Str => {
                    Scalar::Str(String::from_utf8(self.bytes(&cname)).unwrap())
                }
                guards_vectors_kind::Bytes => Scalar::Bytes(self.bytes(&cname)),
            };
            args.set(name, value);
        }
        let op = text(s.op);
        let role = match (op.as_str(), s.step_index) {
            ("new", -1) => Role::Build,
            ("free", -1) => Role::Free,
            (_, -1) => Role::Release,
            _ => Role::Op,
        };
        let guard = text(s.guard);
        Step {
            guard: guards::vectors::guard_names()
                .find(|g| *g == guard)
                .expect("a guard of the interpreter"),
            // Ops come from a fixed table: leaking each string is bounded.
            op: Box::leak(op.into_boxed_str()),
            args,
            origin: Origin {
                file: text(s.file),
                case: text(s.case_name),
                step: usize::try_from(s.step_index).ok(),
                repetition: s.repetition,
                role,
            },
        }
    }
}

/// What a replay through the C ABI gave.
pub struct CRun {
    pub steps: Vec<Step>,
    pub report: String,
    pub summary: guards_vectors_summary,
}

fn drive(session: Session, backend: &mut dyn Backend) -> CRun {
    let mut steps = Vec::new();
    loop {
        let s = session.next();
        if s.done == 1 {
            break;
        }
        let step = session.read_step(&s);
        session.submit(&backend.run(&step));
        steps.push(step);
    }
    CRun {
        steps,
        report: session.report(),
        summary: session.summary(),
    }
}

/// Replay `path` (a file or a directory) through the C ABI with `backend`.
pub fn replay_path(path: &Path, backend: &mut dyn Backend) -> CRun {
    drive(Session::open(path), backend)
}

/// Replay one file given as text through the C ABI with `backend`.
pub fn replay_text(file_name: &str, text: &str, backend: &mut dyn Backend) -> CRun {
    drive(Session::open_text(file_name, text), backend)
}
