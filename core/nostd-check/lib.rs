//! Links guards-core into a `#![no_std]` panic=abort static library. See Cargo.toml.
#![no_std]

use guards_core::{Nanos, Rng};

#[panic_handler]
fn on_panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Touches guards-core so it is really linked (called by nobody).
#[no_mangle]
pub extern "C" fn guards_nostd_probe(seed: u64) -> u64 {
    let rng = Rng::new(seed);
    let t = Nanos::from_millis(rng.below(1_000));
    t.as_u64() ^ rng.next_u64()
}
