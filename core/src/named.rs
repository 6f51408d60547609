//! The one vocabulary of every fieldless public enum in core: a stable snake_case
//! `name`, the inverse `from_name`, `TryFrom<u8>` from the fixed
//! discriminant, and `ALL` (every variant, in declaration order).
//!
//! Names are what conformance vectors, stats keys and every binding spell; discriminants are
//! what the C ABI passes. Both are fixed once published: a new variant gets a new name and
//! a new number, and a retired one keeps its number reserved.

/// Implement `ALL`, `name`, `from_name` and `TryFrom<u8>` for a fieldless `#[repr(u8)]`
/// enum. Variants are listed with their names; the discriminants are the enum's own.
macro_rules! named_enum {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: [$ty; [$(stringify!($variant)),+].len()] = [$($ty::$variant),+];

            /// Stable snake_case name, used in conformance vectors, stats and by every
            /// binding.
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }

            /// The variant named `name` (spelled as [`name`](Self::name) spells it), or
            /// `None`.
            pub fn from_name(name: &str) -> Option<$ty> {
                match name {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl ::core::convert::TryFrom<u8> for $ty {
            type Error = $crate::error::UnknownDiscriminant;

            /// The variant whose discriminant is `code`, or an error naming the type.
            fn try_from(code: u8) -> Result<$ty, Self::Error> {
                $(
                    if code == $ty::$variant as u8 {
                        return Ok($ty::$variant);
                    }
                )+
                Err($crate::error::UnknownDiscriminant::new(stringify!($ty), code))
            }
        }
    };
}
