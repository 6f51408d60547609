//! The count window: the last `n` recorded outcomes, exact under concurrency.
//!
//! # Layout
//!
//! ```text
//! head (one AtomicU64):  bits 48..62 epoch tag | bits 0..48 next position
//! slot (n AtomicU64s):   bits 16..64 position + 1 (0 = never written)
//!                        bits  2..16 epoch tag
//!                        bit   1     slow
//!                        bit   0     failed
//! ```
//!
//! The epoch tag is the low 14 bits of the closed generation the outcome was recorded in.
//! Positions count recorded outcomes and wrap at `modulus`, the largest multiple of `n`
//! below 2^48, so position `p` always lives in slot `p % n`.
//!
//! # Protocol
//!
//! 1. **Claim** a position with a compare-and-swap on `head` that succeeds only while the
//!    head's epoch tag is the writer's. A writer whose generation has ended can therefore
//!    never take a position in a newer epoch (no hole is left behind by an outcome that is
//!    then thrown away). The first writer of a new closed generation finds the previous
//!    epoch's tag, re-checks that its generation is still the current closed one, and swaps
//!    the tag in, keeping the position: that swap *is* the clearing of the window, because
//!    slots are only counted when they carry the current tag.
//! 2. **Write** the slot with a compare-and-swap that only replaces an older position (in
//!    serial order modulo `modulus`), so a writer delayed by a whole lap can never overwrite
//!    a newer outcome; its outcome is older than the last `n` anyway.
//! 3. **Scan** (only when needed, see `mod.rs`): count the slots carrying the current tag.
//!
//! At quiescence every claimed position of the current epoch has been written, positions of
//! an epoch are contiguous from its first claim, and each slot holds its newest position, so
//! the slots with the current tag are exactly the last `min(n, recorded)` outcomes of the
//! current closed generation.

use super::WindowCounts;
use crate::sync::{AtomicU64, Ordering};

const TAG_BITS: u32 = 14;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const POS_BITS: u32 = 48;
const POS_MASK: u64 = (1 << POS_BITS) - 1;
const SLOT_POS_SHIFT: u32 = 16;
const SLOT_TAG_SHIFT: u32 = 2;

/// Outcome bit: the call failed.
pub(crate) const FAILED: u64 = 1;
/// Outcome bit: the call was slow.
pub(crate) const SLOW: u64 = 2;

/// The epoch tag of a closed generation.
pub(crate) const fn tag_of(generation: u32) -> u64 {
    generation as u64 & TAG_MASK
}

/// Positions live in `0..modulus(n)`: the largest multiple of `n` not above 2^48 - 1.
pub(crate) const fn modulus(n: u64) -> u64 {
    match POS_MASK.checked_div(n) {
        Some(laps) => laps * n,
        None => POS_MASK,
    }
}

const fn join(tag: u64, pos: u64) -> u64 {
    (tag << POS_BITS) | (pos & POS_MASK)
}

const fn head_tag(h: u64) -> u64 {
    (h >> POS_BITS) & TAG_MASK
}

const fn slot_tag(v: u64) -> u64 {
    (v >> SLOT_TAG_SHIFT) & TAG_MASK
}

/// Whether position+1 value `a` comes after `b` in serial order modulo `m` (both in `1..=m`).
const fn is_newer(a: u64, b: u64, m: u64) -> bool {
    let d = if a >= b { a - b } else { a + m - b };
    d != 0 && d < m / 2
}

/// Claim the next position for an outcome of epoch `tag`, or `None` if the writer's
/// generation is no longer the current closed one. `is_current` re-reads the state word.
pub(crate) fn claim(
    head: &AtomicU64,
    modulus: u64,
    tag: u64,
    is_current: impl Fn() -> bool,
) -> Option<u64> {
    // Ordering (W, see `mod.rs`): positions are unique by the compare-and-swap below.
    let mut h = head.load(Ordering::Acquire);
    loop {
        let pos = h & POS_MASK;
        let want = if head_tag(h) == tag {
            let next = if pos.saturating_add(1) >= modulus {
                0
            } else {
                pos + 1
            };
            join(tag, next)
        } else {
            // The head still carries another epoch's tag: either ours has not been switched
            // in yet (we are the first writer of this closed generation), or our generation
            // is over. Only the state word can tell.
            if !is_current() {
                return None;
            }
            join(tag, pos)
        };
        // Ordering (W): one winner per head value; a failure hands back the newer head.
        match head.compare_exchange(h, want, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) if head_tag(h) == tag => return Some(pos),
            Ok(_) => h = want,
            Err(actual) => h = actual,
        }
    }
}

/// What writing a slot did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// The slot now holds this outcome; `was_current` tells whether the value it replaced
    /// was an outcome of the same epoch (so the window was already full there).
    Replaced { was_current: bool },
    /// A newer lap had already written the slot; this outcome is older than the window.
    Superseded,
}

/// Write the outcome claimed at `pos` into `slot`.
pub(crate) fn write(slot: &AtomicU64, pos: u64, modulus: u64, tag: u64, bits: u64) -> Written {
    let pos1 = pos.saturating_add(1);
    let new = (pos1 << SLOT_POS_SHIFT) | (tag << SLOT_TAG_SHIFT) | (bits & (FAILED | SLOW));
    // Ordering (W): a slot only moves forward because each write is a compare-and-swap
    // from the value it compared; scans see it through (E) and (S).
    let mut old = slot.load(Ordering::Acquire);
    loop {
        let old_pos1 = old >> SLOT_POS_SHIFT;
        if old_pos1 != 0 && !is_newer(pos1, old_pos1, modulus) {
            return Written::Superseded;
        }
        // Ordering (W): as the load above.
        match slot.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                return Written::Replaced {
                    was_current: old_pos1 != 0 && slot_tag(old) == tag,
                }
            }
            Err(actual) => old = actual,
        }
    }
}

/// Count the outcomes of epoch `tag` in `slots`.
pub(crate) fn scan(slots: &[AtomicU64], tag: u64) -> WindowCounts {
    let mut c = WindowCounts::default();
    for slot in slots {
        // Ordering (W): what this scan must see was made visible by the caller's (E)
        // increment or (S) load before the scan.
        let v = slot.load(Ordering::Acquire);
        // Branch-free: outcome bits are unpredictable, so a branch per slot mispredicts.
        let counted = ((v >> SLOT_POS_SHIFT != 0) & (slot_tag(v) == tag)) as u64;
        c.calls += counted;
        c.failures += counted & v;
        c.slow += counted & (v >> 1);
    }
    c
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn slots(n: usize) -> [AtomicU64; 8] {
        assert!(n <= 8);
        core::array::from_fn(|_| AtomicU64::new(0))
    }

    #[test]
    fn modulus_is_a_multiple_of_n() {
        assert_eq!(modulus(20) % 20, 0);
        assert!(modulus(20) <= POS_MASK && POS_MASK - modulus(20) < 20);
        assert_eq!(modulus(1), POS_MASK);
    }

    #[test]
    fn serial_order_wraps() {
        let m = modulus(4);
        assert!(is_newer(2, 1, m));
        assert!(!is_newer(1, 2, m));
        assert!(!is_newer(3, 3, m));
        assert!(is_newer(1, m, m)); // position 0 follows position m - 1
    }

    #[test]
    fn keeps_the_last_n() {
        let head = AtomicU64::new(0);
        let s = slots(4);
        let n = 4u64;
        let m = modulus(n);
        for i in 0..10u64 {
            let p = claim(&head, m, 0, || true).unwrap();
            assert_eq!(p, i);
            let bits = if i >= 7 { FAILED } else { 0 };
            let w = write(&s[(p % n) as usize], p, m, 0, bits);
            assert_eq!(
                w,
                Written::Replaced {
                    was_current: i >= 4
                }
            );
        }
        let c = scan(&s[..4], 0);
        assert_eq!((c.calls, c.failures, c.slow), (4, 3, 0));
    }

    #[test]
    fn a_new_tag_clears_and_stale_writers_are_refused() {
        let head = AtomicU64::new(0);
        let s = slots(2);
        let m = modulus(2);
        for _ in 0..2 {
            let p = claim(&head, m, 0, || true).unwrap();
            write(&s[(p % 2) as usize], p, m, 0, FAILED);
        }
        // A writer of epoch 3 switches the head; the old outcomes no longer count.
        let p = claim(&head, m, 3, || true).unwrap();
        assert_eq!(p, 2);
        assert_eq!(scan(&s[..2], 3).calls, 0);
        write(&s[0], p, m, 3, SLOW);
        let c = scan(&s[..2], 3);
        assert_eq!((c.calls, c.failures, c.slow), (1, 0, 1));
        // A writer of epoch 0 whose generation ended gets no position.
        assert_eq!(claim(&head, m, 0, || false), None);
    }

    #[test]
    fn a_late_lap_cannot_overwrite() {
        let s = AtomicU64::new(0);
        let m = modulus(2);
        assert_eq!(
            write(&s, 4, m, 0, 0),
            Written::Replaced { was_current: false }
        );
        assert_eq!(write(&s, 2, m, 0, FAILED), Written::Superseded);
        assert_eq!(scan(core::slice::from_ref(&s), 0).failures, 0);
    }

    #[test]
    fn positions_wrap_at_the_modulus() {
        let n = 3u64;
        let m = modulus(n);
        let head = AtomicU64::new(join(0, m - 1));
        assert_eq!(claim(&head, m, 0, || true), Some(m - 1));
        assert_eq!(claim(&head, m, 0, || true), Some(0));
        let s = AtomicU64::new(0);
        write(&s, m - 3, m, 0, 0);
        assert_eq!(
            write(&s, 0, m, 0, FAILED),
            Written::Replaced { was_current: true }
        );
    }
}
