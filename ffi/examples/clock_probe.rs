//! Is a TSC clock (the `quanta` crate) usable as the bindings' default clock? It would
//! have to be monotonic across cores AND on CLOCK_MONOTONIC's timeline (users mix explicit
//! `clock_gettime(CLOCK_MONOTONIC)` / `time.monotonic_ns()` values with the default).
//!
//! `cargo run --release -p guards-ffi --example clock_probe [-- SECONDS]` prints:
//!
//! 1. backward steps across cores: two threads, pinned to CPUs 0 and 1 when the machine
//!    has them, read a clock in a loop; each read first loads the largest value any thread
//!    has published, then reads the clock, counts a backward step if its reading is
//!    smaller, and publishes it. (Loading before reading makes the count exact: the
//!    published value was read before ours.) For CLOCK_MONOTONIC, quanta's scaled clock
//!    and the bare TSC.
//! 2. the offset of quanta's clock from CLOCK_MONOTONIC right after calibration and after
//!    1, 2, 4, ... seconds (up to SECONDS, default 8): the drift in ns and in ppm.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use guards::clock::now_ns;

/// A quanta instant in nanoseconds (quanta's `Instant` keeps nanoseconds on the timeline it
/// was calibrated to; its `Debug` prints them).
fn quanta_ns(i: quanta::Instant) -> u64 {
    format!("{i:?}").parse().unwrap_or(0)
}

fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity only
    // touch that local set and the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Reads per thread and backward steps seen, for a clock read by `read`.
fn backward_steps(name: &str, read: Arc<dyn Fn() -> u64 + Send + Sync>, run: Duration) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let last = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (read, last, stop, start) = (
                Arc::clone(&read),
                Arc::clone(&last),
                Arc::clone(&stop),
                Arc::clone(&start),
            );
            std::thread::spawn(move || {
                let pinned = pin(t);
                start.wait();
                let (mut reads, mut back, mut worst) = (0u64, 0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let seen = last.load(Ordering::SeqCst);
                    let v = read();
                    if v < seen {
                        back += 1;
                        worst = worst.max(seen - v);
                    }
                    last.fetch_max(v, Ordering::SeqCst);
                    reads += 1;
                }
                (reads, back, worst, pinned)
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let (mut reads, mut back, mut worst, mut pinned) = (0, 0, 0, true);
    for h in handles {
        let (r, b, w, p) = h.join().unwrap_or((0, 0, 0, false));
        reads += r;
        back += b;
        worst = worst.max(w);
        pinned &= p;
    }
    println!(
        "| {name} | {threads} ({}) | {reads} | {back} | {worst} |",
        if pinned { "pinned" } else { "not pinned" }
    );
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let clock = quanta::Clock::new();

    println!("## Backward steps across cores (1 s per clock)\n");
    println!("| clock | threads | reads | backward steps | largest step (ns) |");
    println!("|---|---|---:|---:|---:|");
    let run = Duration::from_secs(1);
    backward_steps("CLOCK_MONOTONIC (guards_now_ns)", Arc::new(now_ns), run);
    let q = clock.clone();
    backward_steps(
        "quanta Clock::now (TSC, scaled)",
        Arc::new(move || quanta_ns(q.now())),
        run,
    );
    let q = clock.clone();
    backward_steps(
        "quanta Clock::raw (bare TSC)",
        Arc::new(move || q.raw()),
        run,
    );

    println!("\n## quanta's offset from CLOCK_MONOTONIC\n");
    println!("| after (s) | offset (ns) | drift since start (ns) | drift (ppm) |");
    println!("|---:|---:|---:|---:|");
    // The offset at an instant: the quanta reading minus the midpoint of two
    // CLOCK_MONOTONIC readings around it (best of 1000 tries: the narrowest bracket).
    let offset = || {
        let mut best = (u64::MAX, 0i64);
        for _ in 0..1000 {
            let a = now_ns();
            let q = quanta_ns(clock.now());
            let b = now_ns();
            let width = b - a;
            if width < best.0 {
                best = (width, q as i64 - (a + width / 2) as i64);
            }
        }
        best.1
    };
    let t0 = Instant::now();
    let first = offset();
    println!("| 0 | {first} | 0 | 0 |");
    let mut wait = 1;
    while wait <= secs {
        let target = Duration::from_secs(wait);
        if let Some(left) = target.checked_sub(t0.elapsed()) {
            std::thread::sleep(left);
        }
        let o = offset();
        let elapsed = t0.elapsed().as_secs_f64();
        let drift = o - first;
        println!(
            "| {elapsed:.1} | {o} | {drift} | {:.2} |",
            drift as f64 / (elapsed * 1e3)
        );
        wait *= 2;
    }
}
