//! Core's limiter and admission door as one shape: a priority gate that grants a permit at
//! a priority, takes it back with how the call ended, or takes it back unused.
//!
//! The two guards differ in what they decide (a limit that adapts, a door that refuses the
//! lowest priorities first) but not in how a binding holds their permits, so every binding
//! writes that holding once over [`Gate`].

use guards_core::admission::{Admission, AdmissionPermit, AdmissionRejected};
use guards_core::limiter::{Limiter, LimiterPermit, LimiterRejected};
use guards_core::outcome::{LimiterVerdict, Outcome};
use guards_core::{Nanos, Priority};

use crate::error::Failure;

/// A guard that admits calls by priority and learns from how they ended.
pub trait Gate: Send + Sync + 'static {
    /// A granted call (move-only; handed back exactly once).
    type Permit: Send + 'static;
    /// Why a call was refused.
    type Rejected: Copy + Into<Failure> + 'static;
    /// Grant a call of priority `p` at `now`, or refuse it.
    fn try_acquire(&self, now: Nanos, p: Priority) -> Result<Self::Permit, Self::Rejected>;
    /// The call of `p` ended at `now` with `outcome`.
    fn report(&self, p: Self::Permit, outcome: Outcome, now: Nanos) -> LimiterVerdict;
    /// `p` goes back without a sample (its call never ran, or nobody will report it).
    fn on_ignore(&self, p: Self::Permit);
}

macro_rules! gate {
    ($($g:ty => $permit:ty, $rejected:ty;)*) => {$(
        impl Gate for $g {
            type Permit = $permit;
            type Rejected = $rejected;
            #[inline(always)]
            fn try_acquire(&self, now: Nanos, p: Priority) -> Result<$permit, $rejected> {
                <$g>::try_acquire(self, now, p)
            }
            #[inline(always)]
            fn report(&self, p: $permit, outcome: Outcome, now: Nanos) -> LimiterVerdict {
                <$g>::report(self, p, outcome, now)
            }
            #[inline(always)]
            fn on_ignore(&self, p: $permit) {
                <$g>::on_ignore(self, p)
            }
        }
    )*};
}

gate! {
    Limiter => LimiterPermit, LimiterRejected;
    Admission => AdmissionPermit, AdmissionRejected;
}

#[cfg(test)]
mod tests {
    use super::*;
    use guards_core::admission::AdmissionConfig;
    use guards_core::limit::LimitConfig;
    use guards_core::limiter::LimiterConfig;
    use guards_core::priority::MAX_PRIORITIES;

    /// Grant one, refuse the next (limit 1), report, grant again: through the trait only.
    fn one_at_a_time<G: Gate>(g: &G) {
        let p = g
            .try_acquire(Nanos(0), Priority::CRITICAL)
            .ok()
            .expect("a first call");
        assert!(g.try_acquire(Nanos(1), Priority::CRITICAL).is_err());
        let _ = g.report(p, Outcome::Success, Nanos(2));
        let p = g
            .try_acquire(Nanos(3), Priority::CRITICAL)
            .ok()
            .expect("the slot is back");
        g.on_ignore(p);
        assert!(g.try_acquire(Nanos(4), Priority::CRITICAL).is_ok());
    }

    #[test]
    fn both_guards_hold_their_permits_through_the_trait() {
        let l = Limiter::new(LimiterConfig {
            limit: LimitConfig::Fixed(1),
            ..LimiterConfig::default()
        })
        .expect("valid config");
        one_at_a_time(&l);
        let a = Admission::new(AdmissionConfig {
            limits: [1; MAX_PRIORITIES],
            ..AdmissionConfig::default()
        })
        .expect("valid config");
        one_at_a_time(&a);
    }
}
