//! The default clock is CLOCK_MONOTONIC: never steps back, not across threads either, and
//! lies between two `clock_gettime(CLOCK_MONOTONIC)` readings taken around it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use guards::clock::{now, now_ns};

fn monotonic_raw() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
fn on_clock_monotonic_timeline() {
    for _ in 0..10_000 {
        let a = monotonic_raw();
        let g = now_ns();
        let b = monotonic_raw();
        assert!(a <= g && g <= b, "{a} <= {g} <= {b}");
    }
    assert!(now().0 >= now_ns().saturating_sub(1_000_000_000));
}

/// Threads publish every reading after loading the largest published so far: a reading
/// below a value published before it was read is a backward step. None may occur.
#[test]
fn never_steps_back_across_threads() {
    const THREADS: usize = 4;
    const READS: u64 = 200_000;
    let last = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (last, start) = (Arc::clone(&last), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut back = 0u64;
                for _ in 0..READS {
                    let seen = last.load(Ordering::SeqCst);
                    let v = now_ns();
                    if v < seen {
                        back += 1;
                    }
                    last.fetch_max(v, Ordering::SeqCst);
                }
                back
            })
        })
        .collect();
    let back: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(back, 0);
}
