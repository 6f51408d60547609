//! The breaker's state word and its open-until word: bit layouts and the pure functions that
//! pack and unpack them. Nothing here touches an atomic; `mod.rs` owns the protocols.
//!
//! # The state word (one `AtomicU64`)
//!
//! ```text
//! bits  0..2   state: 0 closed, 1 open, 2 half-open
//! bits  2..12  probes issued in this half-open generation (0..=1000)
//! bits 12..22  probes passed in this half-open generation (0..=1000)
//! bits 22..32  consecutive openings without a close (saturates at 1023)
//! bits 32..64  generation: +1 on every transition, wrapping at 2^32
//! ```
//!
//! Every transition is one compare-and-swap from an observed word to a word whose generation
//! is one higher, so it happens at most once per generation, and a permit remembers the
//! generation it was issued in.
//!
//! # The open-until word (one `AtomicU64`)
//!
//! ```text
//! bits  0..10  generation tag: the low 10 bits of the OPEN generation it belongs to
//! bits 10..64  open-until instant in whole microseconds, rounded up (2^54 - 1 = never)
//! ```
//!
//! It is written before the state word publishes that generation, see `mod.rs`.

use crate::time::Nanos;

/// Closed: calls flow, outcomes are recorded.
pub(crate) const CLOSED: u8 = 0;
/// Open: calls are refused until the open-until instant.
pub(crate) const OPEN: u8 = 1;
/// Half-open: a limited number of probes are let through.
pub(crate) const HALF_OPEN: u8 = 2;

const STATE_MASK: u64 = 0b11;
const FIELD_BITS: u32 = 10;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const ISSUED_SHIFT: u32 = 2;
const PASSED_SHIFT: u32 = 12;
const OPENS_SHIFT: u32 = 22;
const GEN_SHIFT: u32 = 32;

/// The largest value of the consecutive-openings field; it saturates there.
pub(crate) const MAX_OPENS: u32 = FIELD_MASK as u32;

/// The state word, unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) state: u8,
    pub(crate) issued: u32,
    pub(crate) passed: u32,
    pub(crate) opens: u32,
    pub(crate) generation: u32,
}

impl Word {
    /// The word of a new breaker: closed, generation 0.
    pub(crate) const INITIAL: Word = Word {
        state: CLOSED,
        issued: 0,
        passed: 0,
        opens: 0,
        generation: 0,
    };

    pub(crate) const fn unpack(w: u64) -> Word {
        let state = match w & STATE_MASK {
            1 => OPEN,
            2 => HALF_OPEN,
            // 3 is never written; reading it as closed keeps decoding total.
            _ => CLOSED,
        };
        Word {
            state,
            issued: ((w >> ISSUED_SHIFT) & FIELD_MASK) as u32,
            passed: ((w >> PASSED_SHIFT) & FIELD_MASK) as u32,
            opens: ((w >> OPENS_SHIFT) & FIELD_MASK) as u32,
            generation: (w >> GEN_SHIFT) as u32,
        }
    }

    pub(crate) const fn pack(self) -> u64 {
        (self.state as u64 & STATE_MASK)
            | ((self.issued as u64 & FIELD_MASK) << ISSUED_SHIFT)
            | ((self.passed as u64 & FIELD_MASK) << PASSED_SHIFT)
            | ((self.opens as u64 & FIELD_MASK) << OPENS_SHIFT)
            | ((self.generation as u64) << GEN_SHIFT)
    }

    /// The word after a transition into `state`: next generation, no probes.
    pub(crate) const fn next(self, state: u8, opens: u32) -> Word {
        Word {
            state,
            issued: 0,
            passed: 0,
            opens,
            generation: self.generation.wrapping_add(1),
        }
    }
}

const MARK_TAG_BITS: u32 = 10;
const MARK_TAG_MASK: u64 = (1 << MARK_TAG_BITS) - 1;
/// Largest encodable microsecond count; it stands for "never" ([`Nanos::MAX`]).
const MARK_US_NEVER: u64 = (1 << (64 - MARK_TAG_BITS)) - 1;

/// The generation tag stored with an open-until instant.
pub(crate) const fn mark_tag(generation: u32) -> u64 {
    generation as u64 & MARK_TAG_MASK
}

/// Whether an open-until word belongs to `generation`.
pub(crate) const fn mark_is_for(mark: u64, generation: u32) -> bool {
    mark & MARK_TAG_MASK == mark_tag(generation)
}

/// Half the range of the 10-bit generation tag: 512.
const HALF_TAG_RANGE: u64 = 1 << (MARK_TAG_BITS - 1);

/// Whether the tag of `mark` belongs to a generation after `generation` (by at most 511
/// generations: tags wrap at 1024, see the module docs of the breaker for the assumption).
pub(crate) const fn tag_is_newer(mark: u64, generation: u32) -> bool {
    let ahead = (mark & MARK_TAG_MASK).wrapping_sub(mark_tag(generation)) & MARK_TAG_MASK;
    ahead != 0 && ahead < HALF_TAG_RANGE
}

/// Round an instant up to whole microseconds (the open-until resolution).
pub(crate) const fn ceil_micros(t: Nanos) -> u64 {
    let us = t.0 / 1_000;
    if t.0 % 1_000 == 0 {
        us
    } else {
        us + 1
    }
}

/// Pack `until` (rounded up to a microsecond) with `generation`'s tag.
pub(crate) const fn encode_mark(generation: u32, until: Nanos) -> u64 {
    let us = ceil_micros(until);
    let us = if us > MARK_US_NEVER {
        MARK_US_NEVER
    } else {
        us
    };
    (us << MARK_TAG_BITS) | mark_tag(generation)
}

/// The open-until instant stored in a mark word.
pub(crate) const fn decode_mark(mark: u64) -> Nanos {
    let us = mark >> MARK_TAG_BITS;
    if us >= MARK_US_NEVER {
        Nanos::MAX
    } else {
        Nanos(us * 1_000)
    }
}

/// The open-until instant a mark written now would report: `until` rounded up to a whole
/// microsecond, or [`Nanos::MAX`] beyond the encodable range.
pub(crate) const fn rounded_until(until: Nanos) -> Nanos {
    decode_mark(encode_mark(0, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_round_trips() {
        let w = Word {
            state: HALF_OPEN,
            issued: 1000,
            passed: 999,
            opens: MAX_OPENS,
            generation: u32::MAX,
        };
        assert_eq!(Word::unpack(w.pack()), w);
        assert_eq!(Word::unpack(0), Word::INITIAL);
        assert_eq!(Word::unpack(3).state, CLOSED);
    }

    #[test]
    fn next_bumps_generation_and_clears_probes() {
        let w = Word {
            state: HALF_OPEN,
            issued: 3,
            passed: 2,
            opens: 4,
            generation: u32::MAX,
        };
        let n = w.next(OPEN, 5);
        assert_eq!(n.generation, 0);
        assert_eq!((n.state, n.issued, n.passed, n.opens), (OPEN, 0, 0, 5));
    }

    #[test]
    fn mark_rounds_up_to_microseconds() {
        let m = encode_mark(7, Nanos(5_000_000_001));
        assert!(mark_is_for(m, 7));
        assert!(mark_is_for(m, 7 + 1024));
        assert!(!mark_is_for(m, 8));
        assert_eq!(decode_mark(m), Nanos(5_000_001_000));
        assert_eq!(
            decode_mark(encode_mark(1, Nanos(5_000_000_000))),
            Nanos(5_000_000_000)
        );
        assert_eq!(decode_mark(encode_mark(1, Nanos::MAX)), Nanos::MAX);
        assert_eq!(rounded_until(Nanos(1)), Nanos(1_000));
        assert_eq!(rounded_until(Nanos::ZERO), Nanos::ZERO);
        // The last representable microsecond is 2^54 - 2.
        let last = Nanos((MARK_US_NEVER - 1) * 1_000);
        assert_eq!(rounded_until(last), last);
        assert_eq!(rounded_until(Nanos(last.0 + 1)), Nanos::MAX);
    }
}
