//! The hot paths as raw Node-API functions bound to their guard.
//!
//! A guarded call (`breaker.execute(fn)`) crosses into the addon twice: to take a permit
//! and to report how the call ended. Through napi-rs each crossing is a method call that
//! unwraps `this` and converts every argument (~95 ns on the development VM, against
//! ~23 ns for a plain function: `docs/benchmarks.md`). These few calls are instead plain
//! Node-API callbacks created once per guard object, each holding its guard as the
//! function's `data`: no `this`, no unwrap, arguments read with one Node-API call each.
//! The JavaScript layer takes them with the guard's `_fast()` and keeps them in private
//! fields.
//!
//! Every callback runs inside the same panic boundary as the napi-rs methods
//! (`catch_unwind`): a panic becomes a thrown `InternalError`, never an abort. A wrong
//! argument type is a `TypeError` naming the argument, as everywhere else. Each function
//! holds one `Rc` of its guard, dropped by a finalizer when the function is collected.

use std::cell::Cell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi::sys;

use crate::errors::{internal, range_error, type_error};

/// A Node-API callback.
pub(crate) type Callback =
    unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// What a fast function returns.
pub(crate) enum Ret {
    /// A number.
    Num(f64),
    /// A boolean.
    Bool(bool),
}

impl From<f64> for Ret {
    fn from(x: f64) -> Self {
        Ret::Num(x)
    }
}

impl From<bool> for Ret {
    fn from(b: bool) -> Self {
        Ret::Bool(b)
    }
}

/// The arguments of one call (at most `N`; missing ones are `undefined`).
pub(crate) struct Argv<const N: usize> {
    env: sys::napi_env,
    v: [sys::napi_value; N],
    /// How many the call passed.
    given: usize,
}

/// Cells of [`Io`].
pub(crate) const IO_CELLS: usize = 4;

/// Arguments passed through memory: a few `i32` cells the layer writes (through an
/// `Int32Array` over them, the `io` of `_fast()`) before calling a fast function with
/// fewer arguments than it takes. Reading a Node-API argument costs ~10 ns on the
/// development VM (a third of an empty native call, `docs/benchmarks.md`); reading a
/// cell costs nothing measurable. A function called with its arguments reads those
/// instead, so both ways give the same answers and the same errors.
pub(crate) struct Io([Cell<i32>; IO_CELLS]);

impl Io {
    pub(crate) fn new() -> Self {
        Io(std::array::from_fn(|_| Cell::new(0)))
    }
}

/// What has an [`Io`] for its fast functions.
pub(crate) trait WithIo {
    fn io(&self) -> &Io;
}

/// The error for a cell holding `x`, outside `0..=max`.
fn cell_range(e: &Env, name: &str, max: u32, x: f64) -> Error {
    range_error(
        e,
        name,
        &format!("`{name}` must be a whole number in 0..={max}, not {x}"),
    )
}

fn type_of(env: sys::napi_env, v: sys::napi_value) -> sys::napi_valuetype {
    let mut t = sys::ValueType::napi_undefined;
    // SAFETY: `v` is an argument of the current call, live for its duration.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    t
}

impl<const N: usize> Argv<N> {
    /// Argument `i` (named `name` in errors) as a number.
    #[inline]
    pub(crate) fn f64(&self, e: &Env, i: usize, name: &str) -> Result<f64> {
        let v = self.v.get(i).copied().unwrap_or(ptr::null_mut());
        let mut x = 0.0;
        // SAFETY: `v` is an argument of the current call (or null, refused by Node-API).
        let st = unsafe { sys::napi_get_value_double(self.env, v, &mut x) };
        if st != sys::Status::napi_ok {
            return Err(self.not(e, i, name, "a number"));
        }
        Ok(x)
    }

    /// Argument `i` as a whole number in `0..=max`.
    #[inline]
    pub(crate) fn whole(&self, e: &Env, i: usize, name: &str, max: u32) -> Result<u32> {
        let x = self.f64(e, i, name)?;
        // `as` saturates (NaN gives 0): a whole number in range converts back exactly.
        let n = x as u32;
        if f64::from(n) != x || n > max {
            return Err(range_error(
                e,
                name,
                &format!("`{name}` must be a whole number in 0..={max}, not {x}"),
            ));
        }
        Ok(n)
    }

    /// Argument `i` as a number, or cell `i` of `io` when the call passed fewer.
    #[inline]
    pub(crate) fn f64_io(&self, e: &Env, i: usize, name: &str, io: &Io) -> Result<f64> {
        if i < self.given {
            return self.f64(e, i, name);
        }
        Ok(f64::from(io.0.get(i).map_or(0, Cell::get)))
    }

    /// Argument `i` as a whole number in `0..=max`, or cell `i` of `io` (checked alike)
    /// when the call passed fewer.
    #[inline]
    pub(crate) fn whole_io(&self, e: &Env, i: usize, name: &str, max: u32, io: &Io) -> Result<u32> {
        if i < self.given {
            return self.whole(e, i, name, max);
        }
        let x = io.0.get(i).map_or(0, Cell::get);
        match u32::try_from(x) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(cell_range(e, name, max, f64::from(x))),
        }
    }

    /// Argument `i` as UTF-8 bytes, in `buf` when they fit (else on the heap).
    #[inline]
    pub(crate) fn str_bytes<'b>(
        &self,
        e: &Env,
        i: usize,
        name: &str,
        buf: &'b mut [u8; 256],
        heap: &'b mut Vec<u8>,
    ) -> Result<&'b [u8]> {
        let v = self.v.get(i).copied().unwrap_or(ptr::null_mut());
        let mut len = 0usize;
        // SAFETY: a null buffer asks for the length only.
        let st =
            unsafe { sys::napi_get_value_string_utf8(self.env, v, ptr::null_mut(), 0, &mut len) };
        if st != sys::Status::napi_ok {
            return Err(self.not(e, i, name, "a string"));
        }
        let out: &mut [u8] = if len < buf.len() {
            &mut buf[..]
        } else {
            heap.resize(len + 1, 0);
            &mut heap[..]
        };
        let mut written = 0usize;
        // SAFETY: `out` is writable for `out.len()` bytes (room for the NUL written too).
        let st = unsafe {
            sys::napi_get_value_string_utf8(
                self.env,
                v,
                out.as_mut_ptr().cast(),
                out.len(),
                &mut written,
            )
        };
        if st != sys::Status::napi_ok {
            return Err(self.not(e, i, name, "a string"));
        }
        Ok(out.get(..written).unwrap_or_default())
    }

    fn not(&self, e: &Env, i: usize, name: &str, expected: &str) -> Error {
        let v = self.v.get(i).copied().unwrap_or(ptr::null_mut());
        let given = match type_of(self.env, v) {
            sys::ValueType::napi_undefined => "undefined",
            sys::ValueType::napi_null => "null",
            sys::ValueType::napi_boolean => "a boolean",
            sys::ValueType::napi_number => "a number",
            sys::ValueType::napi_string => "a string",
            sys::ValueType::napi_symbol => "a symbol",
            sys::ValueType::napi_bigint => "a bigint",
            sys::ValueType::napi_function => "a function",
            _ => "an object",
        };
        type_error(
            e,
            name,
            &format!("`{name}` must be {expected}, not {given}"),
        )
    }
}

/// Run `f` with the function's bound `T` and the call's arguments inside the panic
/// boundary, and hand its result (or its error, thrown) back to JavaScript.
///
/// # Safety
/// `env` and `info` must be those Node-API passed to a callback created by [`functions`]
/// with data `Rc<T>`.
#[inline]
pub(crate) unsafe fn dispatch<T, const N: usize, R: Into<Ret>>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    what: &'static str,
    f: impl FnOnce(&Env, &T, &Argv<N>) -> Result<R>,
) -> sys::napi_value {
    let mut argc = N;
    let mut argv = Argv {
        env,
        v: [ptr::null_mut(); N],
        given: 0,
    };
    let mut data: *mut c_void = ptr::null_mut();
    // SAFETY: the out-pointers are valid; `argv.v` has room for `argc` values (Node-API
    // fills the ones not given with `undefined`).
    let st = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.v.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    // Node-API leaves in `argc` how many the call passed (it may be more than `N`).
    argv.given = argc.min(N);
    let e = Env::from_raw(env);
    if st != sys::Status::napi_ok || data.is_null() {
        let _ = internal(&e, &format!("{what}: no call info"));
        return ptr::null_mut();
    }
    // SAFETY: `data` is the `Rc<T>` this function was created with (see `functions`),
    // kept alive by the function object that is being called.
    let d = unsafe { &*(data as *const T) };
    match catch_unwind(AssertUnwindSafe(|| f(&e, d, &argv))) {
        Ok(Ok(r)) => {
            let mut out = ptr::null_mut();
            // SAFETY: valid env and out-pointer.
            let st = unsafe {
                match r.into() {
                    // A whole number in `i32` range is made as one: V8 keeps it a small
                    // integer (cheaper to make than a double, and never allocated).
                    Ret::Num(x) if f64::from(x as i32) == x => {
                        sys::napi_create_int32(env, x as i32, &mut out)
                    }
                    Ret::Num(x) => sys::napi_create_double(env, x, &mut out),
                    Ret::Bool(b) => sys::napi_get_boolean(env, b, &mut out),
                }
            };
            if st == sys::Status::napi_ok {
                out
            } else {
                ptr::null_mut()
            }
        }
        Ok(Err(err)) => {
            throw(env, err);
            ptr::null_mut()
        }
        Err(_) => {
            let _ = internal(&e, &format!("a bug in guards: {what} panicked"));
            ptr::null_mut()
        }
    }
}

/// Throw `err` unless it says an exception is already pending.
fn throw(env: sys::napi_env, err: Error) {
    if err.status == Status::PendingException {
        return;
    }
    // SAFETY: `env` is the current call's.
    unsafe { JsError::from(err).throw_into(env) };
}

unsafe extern "C" fn release<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is one `Rc<T>` given to exactly one function by `functions`, and
    // this finalizer runs once, when that function is collected.
    drop(unsafe { Rc::from_raw(data as *const T) });
}

/// An object of functions `fns` (name, callback), each bound to its own `Rc` of `data`.
pub(crate) fn functions<'e, T: 'static>(
    env: &'e Env,
    data: &Rc<T>,
    fns: &[(&'static str, Callback)],
) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    for (name, cb) in fns {
        let raw = Rc::into_raw(Rc::clone(data)) as *mut c_void;
        let mut f = ptr::null_mut();
        // SAFETY: valid env, name and out-pointer; `raw` stays valid until `release`.
        let st = unsafe {
            sys::napi_create_function(
                env.raw(),
                name.as_ptr().cast(),
                name.len() as isize,
                Some(*cb),
                raw,
                &mut f,
            )
        };
        if st != sys::Status::napi_ok {
            // SAFETY: the function was not created: this clone is ours to drop.
            drop(unsafe { Rc::from_raw(raw as *const T) });
            return Err(Error::from_status(Status::GenericFailure));
        }
        // SAFETY: `f` is the live function just created; `release::<T>` frees `raw` once.
        let st = unsafe {
            sys::napi_add_finalizer(
                env.raw(),
                f,
                raw,
                Some(release::<T>),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if st != sys::Status::napi_ok {
            // SAFETY: no finalizer owns `raw`: drop it (the function is never called).
            drop(unsafe { Rc::from_raw(raw as *const T) });
            return Err(Error::from_status(Status::GenericFailure));
        }
        // SAFETY: `f` is a live value of this env.
        let value = unsafe { Unknown::from_raw_unchecked(env.raw(), f) };
        o.set_named_property(name, value)?;
    }
    Ok(o)
}

/// `functions`, and `io`: an `Int32Array` over `data`'s [`Io`] (keeping `data` alive), or
/// `undefined` where Node-API allows no buffer over outside memory (the layer then passes
/// arguments).
pub(crate) fn functions_with_io<'e, T: WithIo + 'static>(
    env: &'e Env,
    data: &Rc<T>,
    fns: &[(&'static str, Callback)],
) -> Result<Object<'e>> {
    let mut o = functions(env, data, fns)?;
    o.set_named_property("io", io_array(env, data)?)?;
    Ok(o)
}

fn io_array<'e, T: WithIo + 'static>(env: &'e Env, data: &Rc<T>) -> Result<Unknown<'e>> {
    let raw = env.raw();
    let hint = Rc::into_raw(Rc::clone(data)) as *mut c_void;
    let cells = data.io().0.as_ptr() as *mut c_void;
    let mut buf = ptr::null_mut();
    // SAFETY: `cells` points at the `IO_CELLS` cells inside the `T` that `hint` keeps
    // alive until `release::<T>` runs, when the buffer is collected; JavaScript writes
    // them only between native calls, on this thread (they are `Cell`s).
    let st = unsafe {
        sys::napi_create_external_arraybuffer(
            raw,
            cells,
            IO_CELLS * 4,
            Some(release_hint::<T>),
            hint,
            &mut buf,
        )
    };
    let mut out = ptr::null_mut();
    if st == sys::Status::napi_ok {
        // SAFETY: `buf` is the live buffer just created.
        let st = unsafe {
            sys::napi_create_typedarray(
                raw,
                sys::TypedarrayType::int32_array,
                IO_CELLS,
                buf,
                0,
                &mut out,
            )
        };
        if st != sys::Status::napi_ok {
            return Err(Error::from_status(Status::GenericFailure));
        }
    } else {
        // SAFETY: no buffer owns `hint`: this clone is ours to drop.
        drop(unsafe { Rc::from_raw(hint as *const T) });
        // SAFETY: valid env and out-pointer.
        unsafe { sys::napi_get_undefined(raw, &mut out) };
    }
    // SAFETY: `out` is a live value of this env.
    Ok(unsafe { Unknown::from_raw_unchecked(raw, out) })
}

unsafe extern "C" fn release_hint<T>(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the `Rc<T>` clone `io_array` gave this buffer; this finalizer
    // runs once, when the buffer is collected.
    drop(unsafe { Rc::from_raw(hint as *const T) });
}

/// Declare a fast function: `fast_fn!(name, Data, argc, "what", |env, data, args| body)`
/// (the body returns `Result<f64>` or `Result<bool>`).
macro_rules! fast_fn {
    ($name:ident, $data:ty, $argc:literal, $what:literal, |$env:ident, $d:ident, $a:ident| $body:expr) => {
        unsafe extern "C" fn $name(
            env: napi::sys::napi_env,
            info: napi::sys::napi_callback_info,
        ) -> napi::sys::napi_value {
            // SAFETY: Node-API calls this with its own env and info, for a function
            // `fast::functions` created with an `Rc` of this data type.
            unsafe {
                $crate::fast::dispatch::<$data, $argc, _>(env, info, $what, |$env, $d, $a| {
                    let _ = &$a;
                    $body
                })
            }
        }
    };
}
pub(crate) use fast_fn;
