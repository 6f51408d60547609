//! Brownout: when an optional call fails for good, serve the caller's answer without it
//! (a degraded answer); a required call fails fast. Decided by guards-core's
//! [`Brownout`](guards_core::brownout::Brownout) for each way the call can fail.

use guards_core::brownout::{Brownout, BrownoutConfig, BrownoutDecision, RefusalKind};

use crate::engine::call::Outcome;
use crate::error::SimError;

/// The fallback decision for one edge.
#[derive(Debug)]
pub(crate) struct Fallback {
    brownout: Brownout,
}

impl Fallback {
    pub(crate) fn new(optional: bool, place: &str) -> Result<Self, SimError> {
        let brownout = Brownout::new(BrownoutConfig {
            optional,
            ..BrownoutConfig::default()
        })
        .map_err(|e| SimError::guard(format!("{place}: brownout"), e))?;
        Ok(Fallback { brownout })
    }

    /// Whether to serve the fallback after the call failed for good with `why`. A local
    /// refusal is decided with the refusing guard's kind; every other failure by the call
    /// contract (`Brownout::report`).
    pub(crate) fn serve_fallback(&self, why: Outcome) -> bool {
        let decision = match why {
            Outcome::BreakerOpen => Some(self.brownout.on_refusal(RefusalKind::BreakerOpen)),
            Outcome::GateFull => Some(self.brownout.on_refusal(RefusalKind::BulkheadFull)),
            other => self.brownout.report(super::outcome(other)),
        };
        decision == Some(BrownoutDecision::ServeFallback)
    }

    /// The call succeeded: a full answer.
    pub(crate) fn full(&self) {
        self.brownout.on_full();
    }
}
