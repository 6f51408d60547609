//! The step protocol over the C ABI: a C program replays the vector files through
//! `guards.h` without re-implementing the interpreter.
//!
//! ```c
//! guards_vectors *v;
//! guards_vectors_open("tests/vectors", &v);
//! guards_vectors_step s;
//! while (guards_vectors_next(v, &s) == GUARDS_RESULT_OK && !s.done) {
//!     if (strcmp(s.op, "new") == 0) { /* build from config.* args, or submit_failure */ }
//!     /* ... run s.op with guards_vectors_arg_u64(v, "now", &now) & co ... */
//!     guards_vectors_result_str(v, "admitted", "call");
//!     guards_vectors_result_unobservable(v, "generation");
//!     guards_vectors_submit(v);
//! }
//! char text[4096];
//! guards_vectors_report(v, text, sizeof text);
//! guards_vectors_free(v);
//! ```
//!
//! A session is not thread-safe: use it from one thread at a time. Strings it hands out
//! (the step's names, string arguments) stay valid until the next `guards_vectors_next`
//! or `guards_vectors_free`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::session::{Reply, Session, Step};
use super::spec;
use super::value::{Entry, Record, Scalar};
use crate::c::{arg, boundary, c_str, Out};
use crate::error::{self, Failure, GuardsResult};

/// A replay of vector files (opaque): see `guards_vectors_open`.
#[derive(Debug)]
pub struct guards_vectors {
    session: Session,
    strings: StepStrings,
    result: Record,
    report: Option<CString>,
}

/// The current step's strings, NUL-terminated for C.
#[derive(Debug, Default)]
struct StepStrings {
    guard: CString,
    op: CString,
    file: CString,
    case: CString,
    names: Vec<CString>,
    /// String and bytes arguments, each followed by a NUL (bytes may hold NULs too).
    values: Vec<Option<Vec<u8>>>,
}

/// The step to run (`guards_vectors_next`). Strings stay valid until the next
/// `guards_vectors_next` or `guards_vectors_free`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct guards_vectors_step {
    /// 1 when every file has been replayed (the other fields are then NULL or 0).
    pub done: u32,
    /// The vector file's guard (`"circuit_breaker"`, `"http"`, ...).
    pub guard: *const c_char,
    /// The op: `"new"` (build the case's guard from the `config.*` arguments), `"free"`
    /// (drop it, and every permit held), or one of the file's ops.
    pub op: *const c_char,
    /// How many arguments (see `guards_vectors_arg_at`).
    pub arg_count: usize,
    /// The vector file (`"circuit_breaker.json"`), for messages.
    pub file: *const c_char,
    /// The case's name, for messages.
    pub case_name: *const c_char,
    /// The step's index in the case, or -1 for a step the interpreter adds (`new`,
    /// `free`, a permit handed back).
    pub step_index: i64,
    /// Which repetition (1-based) of a step with `repeat`.
    pub repetition: u64,
}

impl guards_vectors_step {
    fn done() -> Self {
        guards_vectors_step {
            done: 1,
            guard: std::ptr::null(),
            op: std::ptr::null(),
            arg_count: 0,
            file: std::ptr::null(),
            case_name: std::ptr::null(),
            step_index: -1,
            repetition: 0,
        }
    }
}

/// What an argument holds (`guards_vectors_arg_kind`, `guards_vectors_arg_at`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_vectors_kind {
    /// The step has no such argument.
    Absent = 0,
    /// `null` ("none": no deadline, ...).
    Null = 1,
    /// A bool: `guards_vectors_arg_bool`.
    Bool = 2,
    /// An integer: `guards_vectors_arg_u64` / `_i64` (and `_f64`).
    Int = 3,
    /// A float: `guards_vectors_arg_f64`.
    Float = 4,
    /// A string: `guards_vectors_arg_str`.
    Str = 5,
    /// Bytes (may hold NULs): `guards_vectors_arg_str` with its length.
    Bytes = 6,
}

impl guards_vectors_kind {
    fn of(s: Option<&Scalar>) -> Self {
        match s {
            None => guards_vectors_kind::Absent,
            Some(Scalar::Null) => guards_vectors_kind::Null,
            Some(Scalar::Bool(_)) => guards_vectors_kind::Bool,
            Some(Scalar::Int(_)) => guards_vectors_kind::Int,
            Some(Scalar::Float(_)) => guards_vectors_kind::Float,
            Some(Scalar::Str(_)) => guards_vectors_kind::Str,
            Some(Scalar::Bytes(_)) => guards_vectors_kind::Bytes,
        }
    }
}

/// One argument's name and kind (`guards_vectors_arg_at`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct guards_vectors_arg {
    /// Its name (`"now"`, `"config.window_size"`, ...).
    pub name: *const c_char,
    /// A `guards_vectors_kind`.
    pub kind: u32,
}

/// Counts over a replay (`guards_vectors_get_summary`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_vectors_summary {
    /// Files read.
    pub files: u64,
    /// Cases in them.
    pub cases: u64,
    /// Cases that passed (including those with unobservable values).
    pub passed: u64,
    /// Of those, cases with at least one value the backend could not observe.
    pub partly_observed: u64,
    /// Cases that failed.
    pub failed: u64,
    /// Cases the backend cannot run (a guard or op its API lacks).
    pub not_covered: u64,
    /// Cases or files the vector files get wrong.
    pub file_errors: u64,
    /// Expected values compared.
    pub compared: u64,
    /// Expected values the backend could not observe.
    pub unobserved: u64,
    /// 1 when nothing failed and no file is wrong.
    pub ok: u32,
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

/// The name an argument error names: the config field's schema name when it is one (so a
/// config value that C cannot hold is reported against its field), else the op
/// argument's name, else `"argument"`.
fn static_name(name: &str) -> &'static str {
    let mut rest = name.strip_prefix("config.").unwrap_or(name);
    loop {
        macro_rules! find {
            ($s:ident) => {
                if let Some(f) = crate::schema::$s.field(rest) {
                    return f.name;
                }
            };
        }
        crate::for_each_schema!(find);
        for g in spec::GUARDS {
            for o in g.ops {
                if let Some(a) = o.args.iter().find(|a| a.name == rest) {
                    return a.name;
                }
            }
        }
        for known in [
            "hold",
            "permit",
            "seed",
            "capacity",
            "keyed_slots",
            "algorithm",
            "mode",
        ] {
            if known == rest {
                return known;
            }
        }
        match rest.find('.') {
            Some(i) => rest = rest.get(i + 1..).unwrap_or(""),
            None => return "argument",
        }
    }
}

impl guards_vectors {
    fn new(session: Session) -> Self {
        guards_vectors {
            session,
            strings: StepStrings::default(),
            result: Record::new(),
            report: None,
        }
    }

    fn step(&self) -> Result<&Step, Failure> {
        self.session.pending_step().ok_or(Failure::argument(
            GuardsResult::InvalidArgument,
            "vectors",
            "a session with a step handed out by guards_vectors_next and not yet submitted",
        ))
    }

    fn value(&self, name: &str) -> Result<&Scalar, Failure> {
        self.step()?.args.get(name).ok_or(Failure::argument(
            GuardsResult::InvalidArgument,
            static_name(name),
            "an argument the step has (see guards_vectors_arg_kind)",
        ))
    }

    fn submit(&mut self, reply: Reply) -> Result<(), Failure> {
        self.result = Record::new();
        self.session.submit(reply).map_err(|_| {
            Failure::argument(
                GuardsResult::InvalidArgument,
                "vectors",
                "a session with a step handed out by guards_vectors_next and not yet submitted",
            )
        })
    }
}

fn int_error(code: GuardsResult, name: &str, expected: &'static str) -> Failure {
    Failure::argument(code, static_name(name), expected)
}

/// Open a replay of `path`: one vector file, or every `*.json` of a directory in name
/// order. Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT` (not UTF-8, or no such file or
/// directory). A file that is not a valid vector file is not an error here: the report
/// lists it as a file error. Free the session with `guards_vectors_free`.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_open(
    path: *const c_char,
    out: *mut *mut guards_vectors,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let path = unsafe { c_str(path, "path") }?;
        let out = Out::new(out, "out")?;
        let session = Session::open(path).map_err(|_| {
            Failure::argument(
                GuardsResult::InvalidArgument,
                "path",
                "a readable vector file or a directory of them",
            )
        })?;
        let v = Box::new(guards_vectors::new(session));
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(v)) };
        Ok(())
    })
}

/// Open a replay of one vector file given as `text` (`len` bytes, UTF-8, no NUL needed);
/// `file_name` is its name (`"<guard>.json"`).
///
/// # Safety
/// `file_name` must be NULL or NUL-terminated; `text` NULL or valid for reads of `len`
/// bytes; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_open_text(
    file_name: *const c_char,
    text: *const c_char,
    len: usize,
    out: *mut *mut guards_vectors,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(file_name, "file_name") }?;
        if text.is_null() {
            return Err(Failure::argument(
                GuardsResult::NullArgument,
                "text",
                "a non-NULL pointer",
            ));
        }
        // SAFETY: valid for reads of `len` bytes (caller's contract).
        let bytes = unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) };
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Failure::argument(GuardsResult::InvalidArgument, "text", "UTF-8 text"))?;
        let out = Out::new(out, "out")?;
        let v = Box::new(guards_vectors::new(Session::from_text(name, text)));
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(Box::into_raw(v)) };
        Ok(())
    })
}

/// Free a session (NULL is a no-op).
///
/// # Safety
/// `v` must be NULL or a session from `guards_vectors_open*` not freed before.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_free(v: *mut guards_vectors) {
    if v.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: from `Box::into_raw` in `guards_vectors_open*`, freed once.
        drop(unsafe { Box::from_raw(v) });
        Ok(())
    });
}

/// The next step into `*out` (`out->done` is 1 when every file has been replayed). Until
/// the step is submitted, the same step is returned again. The result being built is
/// cleared.
///
/// # Safety
/// `v` must be NULL or a live session; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_next(
    v: *mut guards_vectors,
    out: *mut guards_vectors_step,
) -> GuardsResult {
    boundary(|| {
        if v.is_null() {
            return Err(Failure::argument(
                GuardsResult::NullArgument,
                "vectors",
                "a non-NULL pointer",
            ));
        }
        let out = Out::new(out, "out")?;
        // SAFETY: a live session used by one thread (caller's contract).
        let v = unsafe { &mut *v };
        v.result = Record::new();
        let Some(step) = v.session.next_step() else {
            // SAFETY: valid for writes (caller's contract).
            unsafe { out.set(guards_vectors_step::done()) };
            return Ok(());
        };
        let strings = StepStrings {
            guard: c_string(step.guard),
            op: c_string(step.op),
            file: c_string(&step.origin.file),
            case: c_string(&step.origin.case),
            names: step.args.iter().map(|(n, _)| c_string(n)).collect(),
            values: step
                .args
                .iter()
                .map(|(_, x)| {
                    let bytes = match x {
                        Scalar::Str(s) => s.as_bytes(),
                        Scalar::Bytes(b) => b.as_slice(),
                        _ => return None,
                    };
                    let mut with_nul = Vec::with_capacity(bytes.len() + 1);
                    with_nul.extend_from_slice(bytes);
                    with_nul.push(0);
                    Some(with_nul)
                })
                .collect(),
        };
        let s = guards_vectors_step {
            done: 0,
            guard: strings.guard.as_ptr(),
            op: strings.op.as_ptr(),
            arg_count: step.args.len(),
            file: strings.file.as_ptr(),
            case_name: strings.case.as_ptr(),
            step_index: step.origin.step.map_or(-1, |i| i as i64),
            repetition: step.origin.repetition,
        };
        v.strings = strings;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(s) };
        Ok(())
    })
}

/// The `index`-th argument's name and kind into `*out` (`INVALID_ARGUMENT` past the end).
///
/// # Safety
/// `v` must be NULL or a live session; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_at(
    v: *const guards_vectors,
    index: usize,
    out: *mut guards_vectors_arg,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        let out = Out::new(out, "out")?;
        let (_, value) = v.step()?.args.at(index).ok_or(Failure::argument(
            GuardsResult::InvalidArgument,
            "index",
            "below the step's arg_count",
        ))?;
        let name = v
            .strings
            .names
            .get(index)
            .map_or(std::ptr::null(), |n| n.as_ptr());
        let a = guards_vectors_arg {
            name,
            kind: guards_vectors_kind::of(Some(value)) as u32,
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(a) };
        Ok(())
    })
}

/// What the argument `name` holds into `*out` (`GUARDS_VECTORS_KIND_ABSENT` when the step
/// does not give it).
///
/// # Safety
/// `v` must be NULL or a live session; `name` NULL or NUL-terminated; `out` NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_kind(
    v: *const guards_vectors,
    name: *const c_char,
    out: *mut guards_vectors_kind,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let k = guards_vectors_kind::of(v.step()?.args.get(name));
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(k) };
        Ok(())
    })
}

/// The integer argument `name` into `*out`. A value a `uint64_t` cannot hold is refused
/// as a config value would be: `CONFIG_NEGATIVE`, `CONFIG_OUT_OF_RANGE`, or
/// `CONFIG_WRONG_TYPE` for a non-integer, naming the field (pass the code to
/// `guards_vectors_submit_failure` when building a guard). `INVALID_ARGUMENT` when absent.
///
/// # Safety
/// `v` must be NULL or a live session; `name` NULL or NUL-terminated; `out` NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_u64(
    v: *const guards_vectors,
    name: *const c_char,
    out: *mut u64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let x = match v.value(name)? {
            Scalar::Int(i) if *i < 0 => {
                return Err(int_error(
                    GuardsResult::ConfigNegative,
                    name,
                    "a non-negative integer",
                ))
            }
            Scalar::Int(i) => u64::try_from(*i).map_err(|_| {
                int_error(
                    GuardsResult::ConfigOutOfRange,
                    name,
                    "an integer below 2^64",
                )
            })?,
            _ => return Err(int_error(GuardsResult::ConfigWrongType, name, "an integer")),
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(x) };
        Ok(())
    })
}

/// The integer argument `name` into `*out` as a signed value (`CONFIG_OUT_OF_RANGE` if it
/// does not fit, `CONFIG_WRONG_TYPE` for a non-integer).
///
/// # Safety
/// As `guards_vectors_arg_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_i64(
    v: *const guards_vectors,
    name: *const c_char,
    out: *mut i64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let x = match v.value(name)? {
            Scalar::Int(i) => i64::try_from(*i).map_err(|_| {
                int_error(
                    GuardsResult::ConfigOutOfRange,
                    name,
                    "a signed 64-bit integer",
                )
            })?,
            _ => return Err(int_error(GuardsResult::ConfigWrongType, name, "an integer")),
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(x) };
        Ok(())
    })
}

/// The number argument `name` into `*out` (a float, NaN and infinities included, or an
/// integer converted to the nearest double; `CONFIG_WRONG_TYPE` otherwise).
///
/// # Safety
/// As `guards_vectors_arg_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_f64(
    v: *const guards_vectors,
    name: *const c_char,
    out: *mut f64,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let x = match v.value(name)? {
            Scalar::Float(f) => *f,
            Scalar::Int(i) => *i as f64,
            _ => return Err(int_error(GuardsResult::ConfigWrongType, name, "a number")),
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(x) };
        Ok(())
    })
}

/// The bool argument `name` into `*out` (`CONFIG_WRONG_TYPE` otherwise).
///
/// # Safety
/// As `guards_vectors_arg_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_bool(
    v: *const guards_vectors,
    name: *const c_char,
    out: *mut bool,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let x = match v.value(name)? {
            Scalar::Bool(b) => *b,
            _ => return Err(int_error(GuardsResult::ConfigWrongType, name, "a bool")),
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(x) };
        Ok(())
    })
}

/// The string (or bytes) argument `name`: a NUL-terminated pointer into `*out` and its
/// length without the NUL into `*len` (bytes may hold NULs: use the length). Valid until
/// the next `guards_vectors_next`. `CONFIG_WRONG_TYPE` for another kind.
///
/// # Safety
/// As `guards_vectors_arg_u64`; `len` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_arg_str(
    v: *const guards_vectors,
    name: *const c_char,
    out: *mut *const c_char,
    len: *mut usize,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let out = Out::new(out, "out")?;
        let len = Out::new(len, "len")?;
        let step = v.step()?;
        let index = step
            .args
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| {
                Failure::argument(
                    GuardsResult::InvalidArgument,
                    static_name(name),
                    "an argument the step has (see guards_vectors_arg_kind)",
                )
            })?;
        let n = match step.args.at(index) {
            Some((_, Scalar::Str(s))) => s.len(),
            Some((_, Scalar::Bytes(b))) => b.len(),
            _ => return Err(int_error(GuardsResult::ConfigWrongType, name, "a string")),
        };
        let p = v
            .strings
            .values
            .get(index)
            .and_then(Option::as_ref)
            .map_or(std::ptr::null(), |b| b.as_ptr().cast::<c_char>());
        // SAFETY: valid for writes (caller's contract).
        unsafe {
            out.set(p);
            len.set(n);
        }
        Ok(())
    })
}

/// Set the result's leaf at `path` (`""`: the whole result; `"a.b"`, `"list[2]"`: see
/// tests/vectors/README.md) to `e`.
///
/// # Safety
/// `v` must be NULL or a live session; `path` NULL or NUL-terminated.
unsafe fn put(v: *mut guards_vectors, path: *const c_char, e: Entry) -> GuardsResult {
    boundary(|| {
        if v.is_null() {
            return Err(Failure::argument(
                GuardsResult::NullArgument,
                "vectors",
                "a non-NULL pointer",
            ));
        }
        // SAFETY: the caller's contract.
        let path = unsafe { c_str(path, "path") }?;
        // SAFETY: a live session used by one thread (caller's contract).
        let v = unsafe { &mut *v };
        v.step()?;
        v.result.put(path, e);
        Ok(())
    })
}

/// Set the result at `path` to the integer `value`.
///
/// # Safety
/// `v` must be NULL or a live session; `path` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_u64(
    v: *mut guards_vectors,
    path: *const c_char,
    value: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::Value(Scalar::from(value))) }
}

/// Set the result at `path` to the signed integer `value`.
///
/// # Safety
/// As `guards_vectors_result_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_i64(
    v: *mut guards_vectors,
    path: *const c_char,
    value: i64,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::Value(Scalar::from(value))) }
}

/// Set the result at `path` to the float `value` (compared bit for bit).
///
/// # Safety
/// As `guards_vectors_result_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_f64(
    v: *mut guards_vectors,
    path: *const c_char,
    value: f64,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::Value(Scalar::Float(value))) }
}

/// Set the result at `path` to the bool `value`.
///
/// # Safety
/// As `guards_vectors_result_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_bool(
    v: *mut guards_vectors,
    path: *const c_char,
    value: bool,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::Value(Scalar::Bool(value))) }
}

/// Set the result at `path` to the string `value` (NUL-terminated UTF-8).
///
/// # Safety
/// As `guards_vectors_result_u64`; `value` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_str(
    v: *mut guards_vectors,
    path: *const c_char,
    value: *const c_char,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    match unsafe { c_str(value, "value") } {
        // SAFETY: the caller's contract.
        Ok(s) => unsafe { put(v, path, Entry::Value(Scalar::Str(s.to_owned()))) },
        Err(f) => {
            error::set_last(f);
            f.code
        }
    }
}

/// Set the result at `path` to `null`.
///
/// # Safety
/// As `guards_vectors_result_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_null(
    v: *mut guards_vectors,
    path: *const c_char,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::Value(Scalar::Null)) }
}

/// Set the result at `path` to an empty list.
///
/// # Safety
/// As `guards_vectors_result_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_empty_list(
    v: *mut guards_vectors,
    path: *const c_char,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::EmptyList) }
}

/// Mark the result at `path` (and everything under it; `""`: the whole result) as a value
/// this API cannot observe. It is counted as unobserved, never as equal.
///
/// # Safety
/// As `guards_vectors_result_u64`.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_result_unobservable(
    v: *mut guards_vectors,
    path: *const c_char,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe { put(v, path, Entry::Unobservable) }
}

/// Run `f` on the live session `v`.
///
/// # Safety
/// `v` must be NULL or a live session used by one thread.
unsafe fn with_session(
    v: *mut guards_vectors,
    f: impl FnOnce(&mut guards_vectors) -> Result<(), Failure>,
) -> GuardsResult {
    boundary(|| {
        if v.is_null() {
            return Err(Failure::argument(
                GuardsResult::NullArgument,
                "vectors",
                "a non-NULL pointer",
            ));
        }
        // SAFETY: a live session used by one thread (caller's contract).
        f(unsafe { &mut *v })
    })
}

/// Submit the result set since `guards_vectors_next` (nothing set: an op without a
/// result, `null`).
///
/// # Safety
/// `v` must be NULL or a live session.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_submit(v: *mut guards_vectors) -> GuardsResult {
    // SAFETY: the caller's contract.
    unsafe {
        with_session(v, |v| {
            let r = std::mem::take(&mut v.result);
            let r = if r.is_empty() { Record::null() } else { r };
            v.submit(Reply::Result(r))
        })
    }
}

/// Submit that the step failed with `code`, the code a `guards_*` call (or a
/// `guards_vectors_arg_*` getter) returned on this thread just before. A config code
/// (`CONFIG_*`) is a refused config: its field is read from this thread's last failure
/// (`guards_last_error_detail`). Any other code fails the case with its message.
///
/// # Safety
/// `v` must be NULL or a live session.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_submit_failure(
    v: *mut guards_vectors,
    code: u32,
) -> GuardsResult {
    let last = error::last();
    // SAFETY: the caller's contract.
    unsafe {
        with_session(v, |v| {
            let reply = match last {
                Some(f) if f.code as u32 == code => Reply::from_failure(&f),
                _ => Reply::Failed(format!(
                    "{code}: {} (no detail: the last failure on this thread has another code)",
                    GuardsResult::message_of(code)
                )),
            };
            v.submit(reply)
        })
    }
}

/// Submit that this API does not have the step's guard or op (yet), saying why. The case
/// is reported as not covered from this step on (never as passed).
///
/// # Safety
/// `v` must be NULL or a live session; `reason` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_submit_unsupported(
    v: *mut guards_vectors,
    reason: *const c_char,
) -> GuardsResult {
    // SAFETY: the caller's contract.
    let reason = match unsafe { c_str(reason, "reason") } {
        Ok(r) => r.to_owned(),
        Err(f) => {
            error::set_last(f);
            return f.code;
        }
    };
    // SAFETY: the caller's contract.
    unsafe { with_session(v, |v| v.submit(Reply::Unsupported(reason))) }
}

/// The counts so far into `*out` (final once `guards_vectors_next` says done).
///
/// # Safety
/// `v` must be NULL or a live session; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_get_summary(
    v: *const guards_vectors,
    out: *mut guards_vectors_summary,
) -> GuardsResult {
    boundary(|| {
        // SAFETY: the caller's contract.
        let v = unsafe { arg(v, "vectors") }?;
        let out = Out::new(out, "out")?;
        let s = v.session.report().summary();
        let n = |x: usize| x as u64;
        let c = guards_vectors_summary {
            files: n(s.files),
            cases: n(s.cases),
            passed: n(s.passed),
            partly_observed: n(s.partly_observed),
            failed: n(s.failed),
            not_covered: n(s.not_covered),
            file_errors: n(s.file_errors),
            compared: n(s.compared),
            unobserved: n(s.unobserved),
            ok: u32::from(s.ok()),
        };
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(c) };
        Ok(())
    })
}

/// Copy the report (a line per file, then every failure with its file, line, case, step,
/// arguments, expected and got) into `buf` of `len` bytes, NUL-terminated and truncated to
/// fit; `buf` may be NULL when `len` is 0. Returns the report's length without the NUL,
/// as `snprintf` does (0 when `v` is NULL).
///
/// # Safety
/// `v` must be NULL or a live session; `buf` NULL or valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn guards_vectors_report(
    v: *mut guards_vectors,
    buf: *mut c_char,
    len: usize,
) -> usize {
    if v.is_null() {
        return 0;
    }
    let text = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a live session used by one thread (caller's contract).
        let v = unsafe { &mut *v };
        let text = c_string(&v.session.report().to_string());
        let n = text.as_bytes().len();
        let p = text.as_ptr();
        v.report = Some(text);
        (p, n)
    }));
    let Ok((p, n)) = text else { return 0 };
    if !buf.is_null() && len > 0 {
        let k = n.min(len - 1);
        // SAFETY: `p` holds `n + 1` bytes (kept alive in the session), `buf` is valid for
        // `len` bytes (caller's contract) and `k + 1 <= len`; they cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(p, buf, k);
            *buf.add(k) = 0;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_name_the_schema_field() {
        assert_eq!(static_name("config.window_size"), "window_size");
        assert_eq!(static_name("config.limit.smoothing"), "smoothing");
        assert_eq!(static_name("config.policy.backoff.base"), "backoff.base");
        assert_eq!(static_name("config.tracker.window"), "tracker.window");
        assert_eq!(static_name("config.limits[2]"), "limits[2]");
        assert_eq!(static_name("now"), "now");
        assert_eq!(static_name("hold"), "hold");
        assert_eq!(static_name("config.nothing_like_it"), "argument");
    }
}
