//! Run one Basketly preset and print a per-second table and the summary.
//!
//! ```text
//! cargo run -p guards-sim --release --example basketly -- C8 1
//! cargo run -p guards-sim --release --example basketly -- C0 1 --until 20:02:01 --set lb=round_robin
//! cargo run -p guards-sim --release --example basketly -- C0 1 --cols goodput,db_stale --json out.json
//! cargo run -p guards-sim --release --example basketly -- C0 1 --until 20:01:00 --at 20:00:25 shopapi.deadline_check=on
//! ```
//!
//! `--at TIME KEY=VALUE` changes a setting during the run (repeatable).

use std::time::Instant;

use guards_sim::basketly::{run, Config};

const DEFAULT_COLS: &[&str] = &[
    "offered",
    "app_attempts",
    "goodput",
    "goodput_incl_degraded",
    "goodput_checkout",
    "degraded_cart",
    "stock_calls",
    "stock_refused",
    "budget_refusals",
    "breaker_rejections",
    "bulkhead_rejections",
    "db_done",
    "db_stale",
    "reserve_timeouts",
    "shopapi_queue",
    "inside_stock",
    "conn_wait",
    "shopapi_busy",
    "breakers_open",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut setting = "C8".to_string();
    let mut seed = 1u64;
    let mut until: Option<String> = None;
    let mut sets: Vec<String> = Vec::new();
    let mut cols: Option<String> = None;
    let mut json: Option<String> = None;
    let mut changes: Vec<(String, String)> = Vec::new();
    let mut positional = 0;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let next = args.get(i + 1).cloned();
        match a.as_str() {
            "--until" => {
                until = next;
                i += 1;
            }
            "--set" => {
                if let Some(n) = next {
                    sets.push(n);
                }
                i += 1;
            }
            "--cols" => {
                cols = next;
                i += 1;
            }
            "--json" => {
                json = next;
                i += 1;
            }
            "--at" => {
                if let (Some(t), Some(kv)) = (next, args.get(i + 2).cloned()) {
                    changes.push((t, kv));
                }
                i += 2;
            }
            _ => {
                if positional == 0 {
                    setting = a.clone();
                } else if let Ok(s) = a.parse() {
                    seed = s;
                }
                positional += 1;
            }
        }
        i += 1;
    }
    let t0 = Instant::now();
    let config = Config::with_overrides(&setting, &sets).and_then(|mut c| {
        if let Some(u) = &until {
            c.set("until", u)?;
        }
        for (t, kv) in &changes {
            c.at(t, &[kv])?;
        }
        Ok(c)
    });
    let r = match config.and_then(|c| run(&c, seed)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    let names: Vec<String> = match &cols {
        Some(c) => c.split(',').map(|s| s.to_string()).collect(),
        None => DEFAULT_COLS.iter().map(|s| s.to_string()).collect(),
    };
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    println!("{} seed {}", r.setting, r.seed);
    print!("{}", r.table(&refs));
    println!("summary:");
    for (k, v) in &r.summary {
        println!("  {k}: {v:?}");
    }
    for t in &r.traces {
        println!(
            "trace of {} #{} (started {}):",
            t.entry,
            t.root,
            guards_sim::topology::clock::format_micros(t.start)
        );
        print!("{}", t.timeline());
    }
    if let Some(stop) = r.stopped {
        println!("{stop}");
    }
    println!(
        "wall {:.3} s, {} events, {:.2} M events/s, peak {} calls in flight",
        wall,
        r.stats.events,
        r.stats.events as f64 / wall / 1e6,
        r.stats.peak_calls
    );
    if let Some(path) = json {
        if let Err(e) = std::fs::write(&path, r.to_json()) {
            eprintln!("cannot write {path}: {e}");
        }
    }
}
