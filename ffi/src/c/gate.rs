//! What `guards_limiter` and `guards_admission` share: core's gate built in place, and its
//! permits parked in a take-once slot table behind plain-data `guards_permit`s.

use super::{fail_with, guards_permit, hot_outcome, hot_priority, park, settle};
use crate::error::{Failure, GuardsResult};
use crate::gate::Gate;
use crate::handle::{BuildInPlace, InPlace};
use crate::names::Nanos;
use crate::permit::PermitSlots;

/// A gate and its outstanding permits.
pub(crate) struct GateHandle<G: Gate + BuildInPlace> {
    /// The guard.
    pub(crate) gate: InPlace<G>,
    /// Its permits handed to C and not yet reported.
    pub(crate) permits: PermitSlots<G::Permit>,
}

impl<G: Gate + BuildInPlace + std::fmt::Debug> std::fmt::Debug for GateHandle<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateHandle")
            .field("gate", &self.gate)
            .field("outstanding", &self.permits.outstanding())
            .finish()
    }
}

impl<G: Gate + BuildInPlace> GateHandle<G> {
    /// Build the gate from a core config.
    pub(crate) fn new(config: G::Config) -> Result<Self, Failure> {
        Ok(GateHandle {
            gate: InPlace::new(config)?,
            permits: PermitSlots::new(),
        })
    }

    /// Grant a call of priority `prio` at `now` into `*out` (non-null, aligned, writable:
    /// checked by the caller), or the recorded refusal.
    #[inline(always)]
    pub(crate) fn acquire_into(
        &self,
        now: u64,
        prio: u32,
        out: *mut guards_permit,
    ) -> GuardsResult {
        let prio = match hot_priority(prio) {
            Ok(p) => p,
            Err(code) => return code,
        };
        let p = match self.gate.try_acquire(Nanos(now), prio) {
            Ok(p) => p,
            Err(r) => return fail_with(r),
        };
        let head = guards_permit {
            acquired_at_ns: now,
            ..guards_permit::default()
        };
        // SAFETY: `out` is non-null, aligned and writable (checked by the caller).
        unsafe { park(&self.permits, p, head, |p| self.gate.on_ignore(p), out) }
    }

    /// Report `permit`'s call as `outcome` at `now`, once.
    #[inline(always)]
    pub(crate) fn report_code(
        &self,
        permit: &guards_permit,
        outcome: u32,
        now: u64,
    ) -> GuardsResult {
        let outcome = match hot_outcome(outcome) {
            Ok(o) => o,
            Err(code) => return code,
        };
        settle(&self.permits, permit, |p| {
            let _ = self.gate.report(p, outcome, Nanos(now));
        })
    }
}
