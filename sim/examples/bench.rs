//! Benchmark: events per wall second, and the wall time of C0 over 30 simulated seconds.
//!
//! ```text
//! cargo run -p guards-sim --release --example bench
//! ```
//! Each run is repeated and the fastest wall time is reported (the machine is shared).

use std::time::Instant;

use guards_sim::basketly::{run, Config};

fn time(setting: &str, start: &str, until: &str, reps: usize) -> (f64, u64) {
    let mut best = f64::MAX;
    let mut events = 0;
    for _ in 0..reps {
        let mut c = match Config::with_overrides(
            setting,
            &[format!("start={start}"), format!("until={until}")],
        ) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{setting}: {e}");
                return (f64::NAN, 0);
            }
        };
        c.name = setting.to_string();
        let t0 = Instant::now();
        let r = match run(&c, 1) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{setting}: {e}");
                return (f64::NAN, 0);
            }
        };
        best = best.min(t0.elapsed().as_secs_f64());
        events = r.stats.events;
    }
    (best, events)
}

fn main() {
    println!(
        "{:<10} {:>10} {:>12} {:>14}",
        "setting", "sim s", "wall s", "M events/s"
    );
    let rows = [
        ("C0", "19:59:45", "20:00:15"),
        ("C0", "19:59:55", "20:00:25"),
        ("C0", "19:59:45", "20:02:00"),
        ("C1", "19:59:55", "20:00:25"),
        ("C4", "19:59:55", "20:00:25"),
        ("C8", "19:59:55", "20:00:25"),
        ("healthy", "20:00:00", "20:01:00"),
    ];
    for (s, a, b) in rows {
        let secs = guards_sim::topology::clock::parse(b)
            .zip(guards_sim::topology::clock::parse(a))
            .map_or(0.0, |(b, a)| b.saturating_sub(a).as_secs_f64());
        let (wall, events) = time(s, a, b, 3);
        println!(
            "{:<10} {:>10.0} {:>12.3} {:>14.2}   ({} events, {}..{})",
            s,
            secs,
            wall,
            events as f64 / wall / 1e6,
            events,
            a,
            b
        );
    }
}
