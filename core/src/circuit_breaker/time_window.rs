//! The time window: the outcomes of the last `B` buckets of width `w`, one bucket per
//! period `k = now / w`, kept in bucket `k % B`.
//!
//! # Layout
//!
//! Each bucket is three `AtomicU64` cells (calls, failures, slow calls), each packing:
//!
//! ```text
//! bits 32..64  period tag: the low 32 bits of k
//! bits 24..32  epoch tag: the low 8 bits of the closed generation
//! bits  0..24  count (saturates at 2^24 - 1); a count of 0 marks an empty cell
//! ```
//!
//! # Protocol
//!
//! A cell is updated by one compare-and-swap that either adds one to the cell's count (same
//! period and epoch), or takes the cell over with a count of one (the cell is empty, holds an
//! older epoch, or the same epoch and an older period), or does nothing because the cell
//! already belongs to a newer epoch or period. Rollover and increment are one atomic step,
//! so no increment is lost and none lands in the wrong period.
//!
//! Writers update calls, then failures, then slow calls; the scan reads slow calls and
//! failures before calls, so whenever it sees a failure it also sees that call.
//!
//! What is exact, and what is not:
//!
//! - every outcome recorded for a period that still owns its bucket is counted exactly once;
//! - an outcome whose `now` is at least a whole window older than another recorded outcome
//!   in the same bucket is dropped (its period has already been replaced);
//! - the scan counts buckets whose period is within the window of the scanner's own `now`;
//!   a bucket taken over by a caller with a later `now` is not counted by a scanner with an
//!   earlier one;
//! - counts saturate at 2^24 - 1 per bucket;
//! - the epoch tags order epochs within 127 generations: a writer whose generation ended and
//!   that stalls across more than 127 transitions could take a bucket back.
//!
//! On closing, the breaker empties every cell before publishing the closed state (see
//! `mod.rs`), so each closed generation starts from an empty window.

use super::WindowCounts;
use crate::sync::{AtomicU64, Ordering};

const COUNT_MASK: u64 = (1 << 24) - 1;
const EPOCH_SHIFT: u32 = 24;
const PERIOD_SHIFT: u32 = 32;

/// Largest count a cell holds.
pub(crate) const MAX_COUNT: u64 = COUNT_MASK;

/// The epoch tag of a closed generation.
pub(crate) const fn epoch_of(generation: u32) -> u8 {
    generation as u8
}

const fn pack(period: u32, epoch: u8, count: u64) -> u64 {
    ((period as u64) << PERIOD_SHIFT) | ((epoch as u64) << EPOCH_SHIFT) | (count & COUNT_MASK)
}

const fn period_of(v: u64) -> u32 {
    (v >> PERIOD_SHIFT) as u32
}

const fn epoch_in(v: u64) -> u8 {
    (v >> EPOCH_SHIFT) as u8
}

/// `a` is a later epoch than `b` (serial order on 8 bits).
const fn epoch_newer(a: u8, b: u8) -> bool {
    (a.wrapping_sub(b) as i8) > 0
}

/// `a` is a later period than `b` (serial order on 32 bits).
const fn period_newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// What adding one to a cell did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bump {
    /// Added to the cell's current period; the count is now this.
    Added(u64),
    /// Took the cell over for this period (count 1).
    Rolled,
    /// The cell belongs to a newer period or epoch; nothing was written.
    Dropped,
}

/// Add one outcome of `period`/`epoch` to `cell`.
pub(crate) fn bump(cell: &AtomicU64, period: u32, epoch: u8) -> Bump {
    // Ordering (T, see `mod.rs`): the value only decides the next compare-and-swap.
    let mut v = cell.load(Ordering::Acquire);
    loop {
        let count = v & COUNT_MASK;
        let (vp, ve) = (period_of(v), epoch_in(v));
        let (new, result) =
            if count == 0 || epoch_newer(epoch, ve) || (epoch == ve && period_newer(period, vp)) {
                (pack(period, epoch, 1), Bump::Rolled)
            } else if epoch == ve && period == vp {
                if count >= MAX_COUNT {
                    return Bump::Added(MAX_COUNT);
                }
                (v + 1, Bump::Added(count + 1))
            } else {
                return Bump::Dropped;
            };
        // Ordering (T): release, so a scan that sees this bump (a failure or a slow call)
        // also sees the calls bump the writer made before it.
        match cell.compare_exchange(v, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return result,
            Err(actual) => v = actual,
        }
    }
}

/// Record one outcome in bucket `period % buckets`. Returns whether the window must be
/// evaluated: always for a failure, a slow call or a rollover, and for a fast success while
/// its bucket holds at most `min_calls` calls (it may bring the window up to the minimum).
/// A fast success added to a bucket that already held `min_calls` calls only lowers both
/// rates and cannot open the breaker.
pub(crate) fn record(
    cells: &[AtomicU64],
    buckets: u64,
    period: u64,
    epoch: u8,
    failed: bool,
    slow: bool,
    min_calls: u64,
) -> bool {
    let base = ((period % buckets.max(1)) as usize).saturating_mul(3);
    let (Some(calls), Some(failures), Some(slows)) =
        (cells.get(base), cells.get(base + 1), cells.get(base + 2))
    else {
        return false;
    };
    let tag = period as u32;
    let first = bump(calls, tag, epoch);
    if first == Bump::Dropped {
        return false;
    }
    if failed {
        bump(failures, tag, epoch);
    }
    if slow {
        bump(slows, tag, epoch);
    }
    match first {
        Bump::Added(after) => failed || slow || after <= min_calls,
        Bump::Rolled | Bump::Dropped => true,
    }
}

/// Sum the buckets of `epoch` whose period lies in `(period - buckets, period]`.
pub(crate) fn scan(cells: &[AtomicU64], buckets: u64, period: u64, epoch: u8) -> WindowCounts {
    let now_tag = period as u32;
    let valid = |v: u64| -> u64 {
        let count = v & COUNT_MASK;
        let age = now_tag.wrapping_sub(period_of(v)) as u64;
        if count != 0 && epoch_in(v) == epoch && age < buckets {
            count
        } else {
            0
        }
    };
    let mut c = WindowCounts::default();
    for bucket in cells.chunks_exact(3) {
        let (Some(calls), Some(failures), Some(slows)) =
            (bucket.first(), bucket.get(1), bucket.get(2))
        else {
            continue;
        };
        // Ordering (T): slow calls and failures first, acquire, so the calls load after them
        // sees every call whose failure or slowness was seen; calls last (acquire is more
        // than that load needs).
        let s = valid(slows.load(Ordering::Acquire));
        let f = valid(failures.load(Ordering::Acquire));
        let n = valid(calls.load(Ordering::Acquire));
        c.calls += n;
        c.failures += f.min(n);
        c.slow += s.min(n);
    }
    c
}

/// Empty every cell (done while half-open, before the close is published).
///
/// Each cell is emptied with a swap (a read-modify-write) rather than a plain store, so that
/// a delayed writer's compare-and-swap can never succeed on the value the clear replaced.
/// (A plain store gives the same guarantee on real hardware; loom models a store racing a
/// compare-and-swap more loosely than the memory model does, and the swap keeps the model
/// exact at no cost on this rare path.)
pub(crate) fn clear(cells: &[AtomicU64]) {
    for cell in cells {
        // Ordering (T): a read-modify-write, so a delayed writer's compare-and-swap fails on
        // it; the closing transition (S) then releases the emptied cells.
        cell.swap(0, Ordering::AcqRel);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn cells() -> [AtomicU64; 6] {
        core::array::from_fn(|_| AtomicU64::new(0))
    }

    #[test]
    fn counts_and_rolls_over() {
        let c = cells();
        assert!(record(&c, 2, 10, 0, false, false, 1)); // rollover
        assert!(!record(&c, 2, 10, 0, false, false, 1)); // 2 > min 1, fast success
        assert!(record(&c, 2, 10, 0, true, true, 1));
        assert!(record(&c, 2, 11, 0, true, false, 1));
        let w = scan(&c, 2, 11, 0);
        assert_eq!((w.calls, w.failures, w.slow), (4, 2, 1));
        // Period 12 replaces period 10 in bucket 0.
        record(&c, 2, 12, 0, false, false, 1);
        let w = scan(&c, 2, 12, 0);
        assert_eq!((w.calls, w.failures, w.slow), (2, 1, 0));
        // A late outcome of period 10 is dropped.
        assert!(!record(&c, 2, 10, 0, true, false, 1));
        assert_eq!(scan(&c, 2, 12, 0).failures, 1);
        // A scanner far ahead sees nothing.
        assert_eq!(scan(&c, 2, 20, 0).calls, 0);
    }

    #[test]
    fn epochs_separate_and_order() {
        let c = cells();
        record(&c, 2, 5, 1, true, false, 1);
        assert_eq!(scan(&c, 2, 5, 2).calls, 0);
        // A newer epoch takes the bucket over; the older one can no longer write there.
        assert_eq!(bump(&c[2], 5, 2), Bump::Rolled);
        assert_eq!(bump(&c[2], 5, 1), Bump::Dropped);
        // Epoch 0 after epoch 255 is newer (serial order).
        assert!(epoch_newer(0, 255));
        assert!(!epoch_newer(255, 0));
        clear(&c);
        assert_eq!(scan(&c, 2, 5, 1).calls, 0);
    }

    #[test]
    fn saturates() {
        let cell = AtomicU64::new(pack(7, 0, MAX_COUNT - 1));
        assert_eq!(bump(&cell, 7, 0), Bump::Added(MAX_COUNT));
        assert_eq!(bump(&cell, 7, 0), Bump::Added(MAX_COUNT));
        assert_eq!(cell.load(Ordering::Relaxed) & COUNT_MASK, MAX_COUNT);
    }

    #[test]
    fn scan_clamps_failures_to_calls() {
        let c = cells();
        // A failure cell for period 3 without its call (its call cell was taken by period 5).
        c[0].store(pack(5, 0, 1), Ordering::Relaxed);
        c[1].store(pack(3, 0, 1), Ordering::Relaxed);
        let w = scan(&c[..3], 2, 4, 0);
        assert_eq!((w.calls, w.failures), (0, 0));
    }

    #[test]
    fn period_tags_wrap() {
        assert!(period_newer(0, u32::MAX));
        let c = cells();
        record(&c, 2, u32::MAX as u64, 0, false, false, 1);
        record(&c, 2, 1 << 32, 0, true, false, 1);
        let w = scan(&c, 2, 1 << 32, 0);
        assert_eq!((w.calls, w.failures), (2, 1));
    }
}
