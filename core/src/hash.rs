//! FNV-1a 64-bit: the one hash every language computes the same way.
//!
//! Used wherever a string or byte key must map to the same number in Rust, C, Python and
//! Node: the stable offset of periodic work ([`crate::backoff::stable_offset`]), operation
//! keys of the brownout table and the keyed breaker set. FNV-1a is tiny, needs no tables
//! and is trivially re-implemented: start from the offset basis `0xcbf29ce484222325` and,
//! for each byte `b` in order, `h = (h XOR b) × 0x100000001b3 mod 2⁶⁴`. It is not
//! collision-resistant against an adversary; keys here come from the service's own code.
//!
//! # Examples
//! ```
//! use guards_core::hash::fnv1a64;
//! assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
//! assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
//! assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
//! ```
//!
//! # References
//! - G. Fowler, L. C. Noll, K.-P. Vo, D. Eastlake, "The FNV Non-Cryptographic Hash
//!   Algorithm", IETF draft `draft-eastlake-fnv` (parameters and test vectors).

/// FNV-1a 64-bit offset basis.
pub const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64-bit prime (2⁴⁰ + 2⁸ + 0xb3).
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64-bit, over `bytes`. Usable in `const` context.
pub const fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET_BASIS;
    let mut rest = bytes;
    while let [b, tail @ ..] = rest {
        h = (h ^ *b as u64).wrapping_mul(FNV_PRIME);
        rest = tail;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
