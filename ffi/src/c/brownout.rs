//! `guards_brownout` and `guards_brownout_table`: core's per-operation brownout policy —
//! what a refused or failed call becomes (a fallback, a fast error, or for exempt paths
//! the call anyway) — for one operation, or a fixed table of operations keyed by name.
//!
//! The table is built with all its operations at once and never changes afterwards, so
//! every call on it is a lock-free read plus one counter increment, from any thread.
//!
//! ```c
//! guards_brownout_operation ops[2];
//! guards_key_of("cart.badges", 11, &ops[0].key);
//! guards_brownout_config_default(&ops[0].config);
//! ops[0].config.optional = true;                   /* serve the page without badges */
//! guards_key_of("cart.items", 10, &ops[1].key);
//! guards_brownout_config_default(&ops[1].config);  /* required: fail fast */
//! guards_brownout_table *t;
//! guards_brownout_table_new(ops, 2, &t);
//! uint32_t d;
//! guards_brownout_table_on_refusal(t, ops[0].key, GUARDS_REFUSAL_KIND_BREAKER_OPEN, &d);
//! /* d == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK */
//! ```

use super::{call, call_out, config_default, free_handle, new_handle, read, refusal_kind};
use crate::error::{Failure, GuardsResult};
use crate::handle::{AnyBrownoutTable, InPlace};
use crate::names::{
    Brownout, BrownoutConfig, BrownoutDecision, BrownoutStats, ConfigError, ConfigErrorKind,
    RefusalKinds,
};
use guards_core::brownout::RegisterError;

/// What to answer for a refused or failed call (`decision` outputs).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum guards_brownout_decision {
    /// Serve the operation's fallback (a degraded answer).
    ServeFallback = 0,
    /// Fail fast with an honest error.
    FailFast = 1,
    /// Exempt: make the call anyway.
    Proceed = 2,
    /// No decision: a full answer (success), or an error passed on as it is (permanent,
    /// ignored, cancelled).
    None = 255,
}

fn decision(d: Option<BrownoutDecision>) -> u32 {
    match d {
        Some(BrownoutDecision::ServeFallback) => guards_brownout_decision::ServeFallback as u32,
        Some(BrownoutDecision::FailFast) => guards_brownout_decision::FailFast as u32,
        Some(BrownoutDecision::Proceed) => guards_brownout_decision::Proceed as u32,
        None => guards_brownout_decision::None as u32,
    }
}

/// One operation's brownout policy. Start from `guards_brownout_config_default`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_brownout_config {
    /// The operation is optional: a fallback may be served (default false: required).
    pub optional: bool,
    /// Never shed: local refusals answer "proceed" (default false).
    pub exempt: bool,
    /// Which failure kinds may fall back, one bit per `guards_refusal_kind` (`1u <<
    /// GUARDS_REFUSAL_KIND_...`; default 0x7F, all seven; not empty when `optional`).
    pub fallback_on: u32,
}

impl guards_brownout_config {
    /// The schema defaults.
    pub fn of_defaults() -> Self {
        Self::of_core(&crate::schema::BROWNOUT.defaults())
    }

    /// Core's config, or `CONFIG_OUT_OF_RANGE` for bits beyond the seven kinds.
    pub fn to_core(&self) -> Result<BrownoutConfig, Failure> {
        let bits = u8::try_from(self.fallback_on).map_err(|_| {
            Failure::from(ConfigError::new(
                "fallback_on",
                ConfigErrorKind::OutOfRange,
                "a subset of the 7 refusal kinds (bits 0..=6)",
            ))
        })?;
        Ok(BrownoutConfig {
            optional: self.optional,
            exempt: self.exempt,
            fallback_on: RefusalKinds(bits),
        })
    }

    /// The C form of core's config.
    pub fn of_core(c: &BrownoutConfig) -> Self {
        guards_brownout_config {
            optional: c.optional,
            exempt: c.exempt,
            fallback_on: u32::from(c.fallback_on.0),
        }
    }
}

/// A brownout's counters: how much of the product is browned out.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct guards_brownout_stats {
    /// Full answers.
    pub full: u64,
    /// Degraded answers (fallbacks served).
    pub degraded: u64,
    /// Errors (failed fast).
    pub errors: u64,
    /// Exempt calls made despite a local refusal.
    pub proceeded: u64,
}

impl From<BrownoutStats> for guards_brownout_stats {
    fn from(s: BrownoutStats) -> Self {
        guards_brownout_stats {
            full: s.full,
            degraded: s.degraded,
            errors: s.errors,
            proceeded: s.proceeded,
        }
    }
}

/// One operation's brownout policy and counters (opaque). Thread-safe and wait-free.
#[derive(Debug)]
pub struct guards_brownout {
    brownout: InPlace<Brownout>,
}

/// Write the default config to `out` (required, not exempt, every kind may fall back once
/// made optional).
///
/// # Safety
/// `out` must be NULL or valid for writes of a `guards_brownout_config`.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_config_default(
    out: *mut guards_brownout_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { config_default(out, guards_brownout_config::of_defaults) }
}

/// Build one operation's brownout from `config` into `*out`. Errors: `NULL_ARGUMENT`,
/// `CONFIG_*` naming the field, `OUT_OF_MEMORY`.
///
/// # Safety
/// `config` must be NULL or point to a valid config; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_new(
    config: *const guards_brownout_config,
    out: *mut *mut guards_brownout,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        new_handle(config, out, |c| {
            Ok(guards_brownout {
                brownout: InPlace::new(c.to_core()?)?,
            })
        })
    }
}

/// Free a brownout (NULL is a no-op).
///
/// # Safety
/// `b` must be NULL or a handle from `guards_brownout_new` not freed before, and no other
/// thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_free(b: *mut guards_brownout) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(b) }
}

/// A guard refused the call, or it failed, with `kind` (a `guards_refusal_kind`): the
/// decision (a `guards_brownout_decision`) into `*out`, counted.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_on_refusal(
    b: *mut guards_brownout,
    kind: u32,
    out: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(b, "brownout", out, |b| {
            Ok(decision(Some(b.brownout.on_refusal(refusal_kind(kind)?))))
        })
    }
}

/// The decision for a refusal or failure of `kind` (a `guards_refusal_kind`) into `*out`,
/// without counting it (what `guards_brownout_on_refusal` would decide: for planning and
/// tests).
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_decide(
    b: *const guards_brownout,
    kind: u32,
    out: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(b, "brownout", out, |b| {
            Ok(decision(Some(
                b.brownout.config().decide(refusal_kind(kind)?),
            )))
        })
    }
}

/// How the call ended (`outcome`: a `guards_outcome`), by the call contract: a success is
/// counted as a full answer (decision `NONE`); timeout, failures and overload answers are
/// decided and counted (for a local refusal prefer `_on_refusal` with the refusing
/// guard's own kind); permanent, ignored and cancelled get no fallback (`NONE`, nothing
/// counted). The decision goes to `*out`.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_report(
    b: *mut guards_brownout,
    outcome: u32,
    out: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(b, "brownout", out, |b| {
            Ok(decision(b.brownout.report(super::outcome(outcome)?)))
        })
    }
}

/// A full answer was served.
///
/// # Safety
/// `b` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_on_full(b: *mut guards_brownout) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(b, "brownout", |b| {
            b.brownout.on_full();
            Ok(())
        })
    }
}

/// The counters into `*out`; safe while other threads use the brownout.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_get_stats(
    b: *const guards_brownout,
    out: *mut guards_brownout_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe { read(b, "brownout", out, |b| b.brownout.stats().into()) }
}

/// The config the brownout was built with.
///
/// # Safety
/// `b` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_get_config(
    b: *const guards_brownout,
    out: *mut guards_brownout_config,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(b, "brownout", out, |b| {
            guards_brownout_config::of_core(b.brownout.config())
        })
    }
}

// ---- the table ----

/// One operation of a brownout table: its key (`guards_key_of` of its name) and policy.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct guards_brownout_operation {
    /// The operation's key.
    pub key: u64,
    /// Its policy.
    pub config: guards_brownout_config,
}

/// Brownout policies of up to 1024 operations, fixed at construction (opaque). Thread-safe
/// and wait-free: share one handle.
#[derive(Debug)]
pub struct guards_brownout_table {
    table: AnyBrownoutTable,
}

/// The most operations a table holds.
pub const GUARDS_BROWNOUT_TABLE_MAX: usize = 1024;

impl guards_brownout_table {
    fn new(ops: &[guards_brownout_operation]) -> Result<Self, Failure> {
        if ops.len() > GUARDS_BROWNOUT_TABLE_MAX {
            return Err(Failure::from(ConfigError::new(
                "n",
                ConfigErrorKind::OutOfRange,
                "at most 1024 operations",
            )));
        }
        let mut table = AnyBrownoutTable::new((ops.len() as u64).max(1))?;
        for op in ops {
            let config = op.config.to_core()?;
            with_brownout_table!(&mut table, t => t.register(op.key, config)).map_err(
                |e| match e {
                    RegisterError::Config(e) => Failure::from(e),
                    RegisterError::Duplicate => Failure::from(ConfigError::new(
                        "ops[].key",
                        ConfigErrorKind::Inconsistent,
                        "a key given once",
                    )),
                    _ => Failure::from(ConfigError::new(
                        "n",
                        ConfigErrorKind::OutOfRange,
                        "at most 1024 operations",
                    )),
                },
            )?;
        }
        Ok(guards_brownout_table { table })
    }

    fn not_found() -> Failure {
        Failure::argument(
            GuardsResult::NotFound,
            "key",
            "the key of a table operation",
        )
    }
}

/// Build a table of the `n` operations at `ops` (keys distinct; `ops` may be NULL when `n`
/// is 0) into `*out`. Errors: `NULL_ARGUMENT`, `CONFIG_OUT_OF_RANGE` (`n` above 1024, or a
/// config's `fallback_on`), `CONFIG_INCONSISTENT` (a key twice, `ops[].key`; an optional
/// operation with no fallback kind), `OUT_OF_MEMORY`.
///
/// # Safety
/// `ops` must be NULL (with `n` 0) or valid for reads of `n` operations; `out` NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_new(
    ops: *const guards_brownout_operation,
    n: usize,
    out: *mut *mut guards_brownout_table,
) -> GuardsResult {
    super::boundary(|| {
        let ops: &[guards_brownout_operation] = if n == 0 {
            &[]
        } else {
            // SAFETY: the caller's contract: non-null, aligned, `n` operations.
            let first = unsafe { super::arg(ops, "ops") }?;
            if n > GUARDS_BROWNOUT_TABLE_MAX {
                return Err(Failure::from(ConfigError::new(
                    "n",
                    ConfigErrorKind::OutOfRange,
                    "at most 1024 operations",
                )));
            }
            // SAFETY: `n` readable operations from `first` (caller's contract).
            unsafe { std::slice::from_raw_parts(first, n) }
        };
        let out = super::Out::new(out, "out")?;
        let h = super::boxed(guards_brownout_table::new(ops)?)?;
        // SAFETY: valid for writes (caller's contract).
        unsafe { out.set(h) };
        Ok(())
    })
}

/// Free a table (NULL is a no-op).
///
/// # Safety
/// `t` must be NULL or a handle from `guards_brownout_table_new` not freed before, and no
/// other thread may use it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_free(t: *mut guards_brownout_table) {
    // SAFETY: the caller's contract, passed on.
    unsafe { free_handle(t) }
}

/// The decision for operation `key` refused or failed with `kind`, into `*out`, counted. An
/// unknown key is treated as a required operation (`FAIL_FAST`) and counted as unknown.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_on_refusal(
    t: *mut guards_brownout_table,
    key: u64,
    kind: u32,
    out: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "table", out, |t| {
            let kind = refusal_kind(kind)?;
            Ok(decision(Some(
                with_brownout_table!(&t.table, t => t.on_refusal(key, kind)),
            )))
        })
    }
}

/// `guards_brownout_report` for operation `key` (an unknown key: counted as unknown, and
/// `FAIL_FAST` for an outcome that has a refusal kind).
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_report(
    t: *mut guards_brownout_table,
    key: u64,
    outcome: u32,
    out: *mut u32,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "table", out, |t| {
            let o = super::outcome(outcome)?;
            Ok(decision(
                with_brownout_table!(&t.table, t => t.report(key, o)),
            ))
        })
    }
}

/// A full answer was served for `key`; `GUARDS_RESULT_NOT_FOUND` (counted as unknown) for
/// an unknown key.
///
/// # Safety
/// `t` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_on_full(
    t: *mut guards_brownout_table,
    key: u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call(t, "table", |t| {
            if with_brownout_table!(&t.table, t => t.on_full(key)) {
                Ok(())
            } else {
                Err(guards_brownout_table::not_found())
            }
        })
    }
}

/// The counters of operation `key` into `*out`; `GUARDS_RESULT_NOT_FOUND` for an unknown
/// key.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_get_stats(
    t: *const guards_brownout_table,
    key: u64,
    out: *mut guards_brownout_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        call_out(t, "table", out, |t| {
            with_brownout_table!(&t.table, t => t.get(key).map(|b| b.stats()))
                .map(guards_brownout_stats::from)
                .ok_or_else(guards_brownout_table::not_found)
        })
    }
}

/// The counters of every operation, summed, into `*out`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_totals(
    t: *const guards_brownout_table,
    out: *mut guards_brownout_stats,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(t, "table", out, |t| {
            with_brownout_table!(&t.table, t => t.totals()).into()
        })
    }
}

/// Decisions and full answers asked for unknown keys, into `*out`.
///
/// # Safety
/// `t` must be NULL or a live handle; `out` NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn guards_brownout_table_unknown(
    t: *const guards_brownout_table,
    out: *mut u64,
) -> GuardsResult {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        read(
            t,
            "table",
            out,
            |t| with_brownout_table!(&t.table, t => t.unknown()),
        )
    }
}
