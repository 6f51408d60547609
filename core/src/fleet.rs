//! Fleet arithmetic: how one member of a fleet sizes its share of a fleet-wide allowance,
//! as pure decisions over a view of the fleet (no I/O, no clock, no allocation).
//!
//! A guard's cap is per instance, so a fleet's total grows with every instance added: four
//! shop-api instances with a stock gate of 12 each hold 48 calls to stock, eight hold 96.
//! The fix is to size from the dependency's capacity ÷ the number of callers, which needs
//! the number of callers. This module is the arithmetic; the agent that reads and writes
//! the view (membership by heartbeat, in a store such as Redis) lives outside core.
//!
//! # What each member publishes
//!
//! Every member `j` keeps one record in the store ([`MemberRecord`]):
//!
//! - `weight`: its relative size (1 for equal members), clamped to `1..=`[`MAX_WEIGHT`];
//! - `held`: an upper bound on the slots it may have in use until it next writes:
//!   `max(cap_j, in_flight_j)` at the time of writing. A member that lowered its cap below
//!   its in-flight count still holds what is in flight: its in-flight count can only fall
//!   until it is under the new cap, so `held` stays a true bound;
//! - its breaker window counts (`calls`, `failures`), for [fleet evidence](#breaker-evidence).
//!
//! A newcomer's first record has `held = 0`. A record that has expired (its heartbeat
//! stopped for the TTL) is not in the view: its slots return to the fleet.
//!
//! # The rule (one member, one view)
//!
//! From a view `V` (all live records, one consistent snapshot), the allowance `A` and its
//! own current cap `c` and in-flight count `k`, a member computes its fair share
//! `f = `[`fair_share`]`(A, V, me)` and decides ([`decide`]):
//!
//! - **shrink or keep, at once**: if `f <= c`, its new cap is `f`. This needs no
//!   coordination: its new `held = max(f, k)` is at most its old `held`, so the sum of all
//!   `held` cannot rise.
//! - **grow only into what the view leaves free**: if `f > c`, let
//!   `free = A − Σ_{j ≠ me} held_j` (saturating). The new cap is `min(f, free)` if that is
//!   above `c` (and `k <= free`), else `c` is kept. A growth is a *claim*: the agent writes
//!   it only if no other claim was written since it read `V` (a compare-and-set on a
//!   version the store bumps with each claim); if another claim came first, it reads again.
//!   Shrinks, keeps, joins and expiries need no version bump: each can only lower the sum
//!   of `held` or leave it, so a claim computed on an older view stays safe.
//!
//! # The bound
//!
//! Invariant: `Σ held_j <= A` over the live records, and each member's in-flight count is
//! at most its own `held`. Proof sketch: a shrink or keep lowers or keeps `held_me`; a join
//! adds `held = 0`; an expiry removes a record; a claim is serialised after every earlier
//! claim and sets `held_me' = max(c', k) <= free`, with `k <= held_me` so that
//! `Σ_{j≠me} held_j + held_me' <= A`. Therefore **the calls in flight across the fleet never
//! exceed the allowance** while members can reach the store; a scale-out does not overshoot
//! at all: the newcomer starts at 0 and grows as the others' `held` shrinks (they shrink on
//! their next sync, and their `held` falls as their calls drain). The ramp takes one sync
//! interval after the others' syncs plus the time their surplus calls take to drain.
//! `core/tests/fleet.rs` checks the invariant under random joins, leaves, expiries, loads
//! and interleavings of reads and writes, and that every member reaches its fair share.
//!
//! What the bound does not cover: a member cut off from the store keeps its last share for
//! `stale_after`, then falls back to [`fallback_share`]; once its record expires (the TTL),
//! the others may take its share while it still serves its fallback, so while cut off the
//! fleet may exceed `A` by that member's fallback share (0 if the fallback floor is 0).
//! A member killed outright takes its calls with it.
//!
//! # Fair shares
//!
//! [`fair_share`]: with `n` members and `A >= n`, each member first gets 1 (the floor) and
//! the remaining `A − n` is split by weight, rounding down, with the slots left over by
//! rounding going one each to the largest remainders (ties: lower id, then lower index).
//! The shares then sum to exactly `A`. With `A < n`, the `A` members with the lowest ids
//! get 1 each and the rest 0 (there is not a slot for everyone). The same integer rule
//! splits any allowance measured in whole units: a bulkhead's cap, a token bucket's burst,
//! an earn rate in tokens per second (or per 1000 seconds, for finer rates), a limiter's
//! maximum.
//!
//! # Breaker evidence
//!
//! [`FleetEvidence::from_records`] sums the members' published window counts (each clamped:
//! `calls <= `[`MAX_WINDOW_CALLS`], `failures <= calls`). [`open_on_fleet_evidence`] is the
//! rule for a member whose own window has too few calls to decide: it opens on the fleet's
//! evidence when, and only when, its own window has fewer than `minimum_calls` calls, the
//! fleet's has at least `minimum_calls`, at least [`MIN_EVIDENCE_MEMBERS`] members
//! contributed calls (one member alone, honest or not, cannot open everyone's breaker), and
//! the fleet failure rate is at least the threshold. A member with enough calls of its own
//! decides on its own evidence only.
//!
//! # Hostile records
//!
//! Records come from other processes through a store anyone on the network path may write.
//! [`MemberRecord::sanitized`] clamps every field (`held <= A`, weight into
//! `1..=MAX_WEIGHT`, counts as above) and all sums saturate, so a garbage or huge record
//! can take growth room away (it looks like a member holding `A`) but can never push any
//! member's share above its fair share or below 0, nor make the arithmetic wrap.
//!
//! # Examples
//! ```
//! use guards_core::fleet::{decide, fair_share, MemberRecord};
//!
//! // A fleet cap of 48 on stock, four equal instances at 12 each.
//! let mut view: Vec<MemberRecord> = (0..4).map(|id| MemberRecord::new(id, 1, 12)).collect();
//! assert_eq!(fair_share(48, &view, 0), 12);
//! // A fifth joins with held = 0: its fair share is 9, but nothing is free yet.
//! view.push(MemberRecord::new(4, 1, 0));
//! let d = decide(48, &view, 4, 0, 0);
//! assert_eq!((d.fair, d.cap, d.claim), (9, 0, false));
//! // The others shrink to their fair shares (10, 10, 9, 9) on their next sync...
//! for me in 0..4 {
//!     let d = decide(48, &view, me, 12, 0);
//!     assert!(!d.claim);
//!     view[me].held = d.cap;
//! }
//! // ...and the newcomer's next sync claims what they freed.
//! let d = decide(48, &view, 4, 0, 0);
//! assert_eq!((d.cap, d.claim), (9, true));
//! ```

/// The largest accepted member weight.
pub const MAX_WEIGHT: u32 = 1_000;

/// The largest window call count a member's record may contribute (2^32 − 1).
pub const MAX_WINDOW_CALLS: u64 = u32::MAX as u64;

/// Fleet evidence needs calls from at least this many members (see the module docs).
pub const MIN_EVIDENCE_MEMBERS: u32 = 2;

/// One member's published record, as the arithmetic sees it (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MemberRecord {
    /// A stable identifier (a hash of the member's name); ties between members are broken
    /// by it, so every member ranks a view the same way.
    pub id: u64,
    /// Relative size, `1..=MAX_WEIGHT` after [`MemberRecord::sanitized`].
    pub weight: u32,
    /// An upper bound on the slots the member may use until its next write:
    /// `max(cap, in_flight)` when it wrote.
    pub held: u64,
    /// Calls in the member's breaker window.
    pub calls: u64,
    /// Failures among them.
    pub failures: u64,
}

impl MemberRecord {
    /// A record with no breaker counts.
    pub const fn new(id: u64, weight: u32, held: u64) -> Self {
        MemberRecord {
            id,
            weight,
            held,
            calls: 0,
            failures: 0,
        }
    }

    /// The record with every field clamped into its bounds for `allowance`: `held` to
    /// `0..=allowance`, `weight` to `1..=MAX_WEIGHT`, `calls` to `0..=MAX_WINDOW_CALLS`,
    /// `failures` to `0..=calls`.
    pub fn sanitized(self, allowance: u64) -> Self {
        let calls = self.calls.min(MAX_WINDOW_CALLS);
        MemberRecord {
            id: self.id,
            weight: self.weight.clamp(1, MAX_WEIGHT),
            held: self.held.min(allowance),
            calls,
            failures: self.failures.min(calls),
        }
    }
}

/// `view[me]`'s fair share of `allowance` (see "Fair shares" in the module docs). Every
/// record is [sanitized](MemberRecord::sanitized) first. Over one view the shares of all
/// members sum to exactly `allowance` (never more); 0 if `me` is not in the view.
pub fn fair_share(allowance: u64, view: &[MemberRecord], me: usize) -> u64 {
    let Some(mine) = view.get(me) else {
        return 0;
    };
    let mine = mine.sanitized(allowance);
    let n = view.len() as u64;
    // `a` precedes `b` in the ranking: by key, then id, then index.
    let before = |ka: u128, a: &MemberRecord, ia: usize, kb: u128, b: &MemberRecord, ib: usize| {
        (ka, core::cmp::Reverse(a.id), core::cmp::Reverse(ia))
            > (kb, core::cmp::Reverse(b.id), core::cmp::Reverse(ib))
    };
    if allowance < n {
        // One slot each for the `allowance` lowest ids.
        let rank = view
            .iter()
            .enumerate()
            .filter(|&(j, r)| j != me && before(0, r, j, 0, &mine, me))
            .count() as u64;
        return u64::from(rank < allowance);
    }
    let rest = u128::from(allowance - n);
    let total_weight: u128 = view
        .iter()
        .map(|r| u128::from(r.sanitized(allowance).weight))
        .sum();
    if total_weight == 0 {
        return 1;
    }
    let split = |r: &MemberRecord| {
        let w = u128::from(r.sanitized(allowance).weight);
        (rest * w / total_weight, rest * w % total_weight)
    };
    let given: u128 = view.iter().map(|r| split(r).0).sum();
    let left_over = rest.saturating_sub(given);
    let (q, rem) = split(&mine);
    let rank = view
        .iter()
        .enumerate()
        .filter(|&(j, r)| j != me && before(split(r).1, r, j, rem, &mine, me))
        .count() as u128;
    let extra = u128::from(rank < left_over);
    // q + extra <= rest, and rest + 1 <= allowance: fits in u64.
    u64::try_from(1 + q + extra).unwrap_or(allowance)
}

/// What [`decide`] tells a member to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    /// The member's fair share in this view.
    pub fair: u64,
    /// The cap to enforce now (and to publish as `held = max(cap, in_flight)`).
    pub cap: u64,
    /// `true` when `cap` is a growth: the agent may apply it only if no other claim was
    /// written since the view was read (otherwise it reads again); `false` when `cap` is a
    /// shrink or a keep, safe to apply at once.
    pub claim: bool,
}

/// The sum of the other members' `held` in `view`, each clamped to `allowance`, saturating.
pub fn held_by_others(allowance: u64, view: &[MemberRecord], me: usize) -> u64 {
    view.iter()
        .enumerate()
        .filter(|&(j, _)| j != me)
        .fold(0u64, |acc, (_, r)| {
            acc.saturating_add(r.sanitized(allowance).held)
        })
}

/// The member `view[me]`, enforcing `cap` with `in_flight` calls now, decides its next cap
/// (the rule in the module docs). If `me` is not in the view the decision is a shrink to 0.
pub fn decide(
    allowance: u64,
    view: &[MemberRecord],
    me: usize,
    cap: u64,
    in_flight: u64,
) -> Decision {
    if me >= view.len() {
        return Decision {
            fair: 0,
            cap: 0,
            claim: false,
        };
    }
    let fair = fair_share(allowance, view, me);
    if fair <= cap {
        return Decision {
            fair,
            cap: fair,
            claim: false,
        };
    }
    let free = allowance.saturating_sub(held_by_others(allowance, view, me));
    let grown = fair.min(free);
    if grown > cap && in_flight <= free {
        Decision {
            fair,
            cap: grown,
            claim: true,
        }
    } else {
        Decision {
            fair,
            cap,
            claim: false,
        }
    }
}

/// The share a member falls back to when the store has been unreachable for longer than
/// `stale_after`: `floor` if one is configured, else `allowance ÷ last_known_members`
/// (rounded down, at least 1 when `allowance >= 1`); never above the member's last share
/// `last` (a fallback only shrinks).
pub fn fallback_share(
    allowance: u64,
    last_known_members: u64,
    floor: Option<u64>,
    last: u64,
) -> u64 {
    let share = match floor {
        Some(f) => f.min(allowance),
        None => (allowance / last_known_members.max(1)).max(allowance.min(1)),
    };
    share.min(last)
}

/// The fleet's breaker evidence: summed window counts of the members that reported any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FleetEvidence {
    /// Calls in the members' windows.
    pub calls: u64,
    /// Failures among them.
    pub failures: u64,
    /// Members that contributed at least one call.
    pub members: u32,
}

impl FleetEvidence {
    /// Sum the (sanitized) counts of `view`.
    pub fn from_records(view: &[MemberRecord]) -> Self {
        view.iter().fold(FleetEvidence::default(), |acc, r| {
            let r = r.sanitized(0);
            FleetEvidence {
                calls: acc.calls.saturating_add(r.calls),
                failures: acc.failures.saturating_add(r.failures),
                members: acc.members.saturating_add(u32::from(r.calls > 0)),
            }
        })
    }

    /// Failures ÷ calls, in `0.0..=1.0` (0 with no calls).
    pub fn failure_rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            (self.failures.min(self.calls) as f64) / (self.calls as f64)
        }
    }
}

/// Whether a member whose own window holds `own_calls` calls opens its breaker on the
/// fleet's evidence: `own_calls < minimum_calls`, `fleet.calls >= minimum_calls`,
/// `fleet.members >= MIN_EVIDENCE_MEMBERS` and `fleet.failure_rate() >= threshold` (a NaN
/// threshold never opens). A member with enough calls of its own decides on its own.
pub fn open_on_fleet_evidence(
    own_calls: u64,
    minimum_calls: u64,
    threshold: f64,
    fleet: &FleetEvidence,
) -> bool {
    own_calls < minimum_calls
        && fleet.calls >= minimum_calls.max(1)
        && fleet.members >= MIN_EVIDENCE_MEMBERS
        && fleet.failure_rate() >= threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equal(n: u64) -> [MemberRecord; 8] {
        let mut v = [MemberRecord::default(); 8];
        for (i, r) in v.iter_mut().enumerate().take(n as usize) {
            *r = MemberRecord::new(i as u64 * 7 + 3, 1, 0);
        }
        v
    }

    #[test]
    fn shares_sum_to_the_allowance_with_floors() {
        for a in 0..60u64 {
            for n in 1..=8u64 {
                let v = equal(n);
                let v = &v[..n as usize];
                let s: u64 = (0..v.len()).map(|i| fair_share(a, v, i)).sum();
                assert_eq!(s, a, "a={a} n={n}");
                if a >= n {
                    assert!((0..v.len()).all(|i| fair_share(a, v, i) >= 1));
                }
            }
        }
    }

    #[test]
    fn weights_and_hostile_fields() {
        let v = [
            MemberRecord::new(1, 3, 0),
            MemberRecord::new(2, 1, 0),
            MemberRecord {
                id: 3,
                weight: u32::MAX,
                held: u64::MAX,
                calls: u64::MAX,
                failures: u64::MAX,
            },
        ];
        let s: u64 = (0..3).map(|i| fair_share(100, &v, i)).sum();
        assert_eq!(s, 100);
        // The huge held is clamped to the allowance: nothing is free.
        let d = decide(100, &v, 0, 0, 0);
        assert_eq!((d.cap, d.claim), (0, false));
        let e = FleetEvidence::from_records(&v);
        assert_eq!(
            (e.calls, e.failures, e.members),
            (MAX_WINDOW_CALLS, MAX_WINDOW_CALLS, 1)
        );
        assert!(!open_on_fleet_evidence(0, 10, 0.5, &e));
    }

    #[test]
    fn fallback() {
        assert_eq!(fallback_share(48, 4, None, 12), 12);
        assert_eq!(fallback_share(48, 8, None, 12), 6);
        assert_eq!(fallback_share(48, 100, None, 12), 1);
        assert_eq!(fallback_share(48, 0, None, 12), 12);
        assert_eq!(fallback_share(48, 4, Some(0), 12), 0);
        assert_eq!(fallback_share(48, 4, Some(100), 12), 12);
    }
}
