//! Host-wide guards across processes: this test binary starts copies of itself as child
//! processes (the `GUARDS_SHARED_ROLE` variable says what a child does), which open one
//! region file and use its guards at the same time, with the invariants checked in the
//! children and by the parent:
//!
//! - a bulkhead: the calls inside never exceed the cap, at any instant a child or the
//!   parent looks, and the counters add up to what the children did;
//! - a circuit breaker: every transition counted is a legal one, and the counters add up;
//! - a retry budget: the tokens stay within the bucket, and no more retries were allowed
//!   than the bucket and the deposits paid for;
//! - a limiter: in flight never above the limit, the counters add up;
//! - `kill -9` of a process holding bulkhead, limiter and admission permits and a half-open
//!   probe: everything comes back (when the guard is found full, on open, on request);
//! - a killed creator's half-made guard is finished by the next process; a live one is
//!   waited for, with a timeout;
//! - many processes creating one fresh region and its guards at once end with one each.
//!
//! `harness = false` (see `ffi/Cargo.toml`): `main` runs the tests in order, or a child's
//! role. `cargo test -p guards-ffi --test shared_procs [NAME]` runs them (all, or those
//! whose name contains NAME).

mod shared_util;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use guards::clock::now_ns;
use guards::error::GuardsResult;
use guards::permit::PermitToken;
use guards::shared::{pause_while_creating, Refusal, Region, RegionOptions, Shared};
use guards_core::admission::{Admission, AdmissionConfig};
use guards_core::circuit_breaker::{BreakerState, CircuitBreaker, CircuitBreakerConfig};
use guards_core::limit::LimitConfig;
use guards_core::limiter::{Limiter, LimiterConfig};
use guards_core::retry_budget::{RetryBudget, RetryBudgetConfig, TokenBudgetConfig};
use guards_core::{Bulkhead, BulkheadConfig, Nanos, Outcome, Priority, RetryCause};
use shared_util::Scratch;

const ROLE: &str = "GUARDS_SHARED_ROLE";
const REGION: &str = "GUARDS_SHARED_REGION";

fn main() {
    if let Ok(role) = std::env::var(ROLE) {
        child(&role);
        return;
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tests: [(&str, fn()); 8] = [
        (
            "bulkhead_cap_holds_across_processes",
            bulkhead_cap_holds_across_processes,
        ),
        (
            "breaker_transitions_are_legal_across_processes",
            breaker_transitions_are_legal_across_processes,
        ),
        (
            "budget_tokens_stay_in_bounds_across_processes",
            budget_tokens_stay_in_bounds_across_processes,
        ),
        (
            "limiter_counts_add_up_across_processes",
            limiter_counts_add_up_across_processes,
        ),
        (
            "a_killed_holder_is_reclaimed_when_its_guard_is_full",
            a_killed_holder_is_reclaimed_when_its_guard_is_full,
        ),
        (
            "a_killed_holder_is_reclaimed_on_open_and_on_request",
            a_killed_holder_is_reclaimed_on_open_and_on_request,
        ),
        (
            "a_killed_creator_is_taken_over_and_a_live_one_waited_for",
            a_killed_creator_is_taken_over_and_a_live_one_waited_for,
        ),
        (
            "processes_racing_to_create_a_region_end_with_one_of_each",
            processes_racing_to_create_a_region_end_with_one_of_each,
        ),
    ];
    let mut ran = 0;
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        print!("test {name} ... ");
        let _ = std::io::stdout().flush();
        let started = Instant::now();
        test();
        println!("ok ({} ms)", started.elapsed().as_millis());
        ran += 1;
    }
    println!("\ntest result: ok. {ran} passed");
}

// ---- Parent side.

/// Children that are killed if the test fails before it waits for them.
struct Kids(Vec<Child>);

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(role: &str, region: &str, vars: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.env(ROLE, role)
        // Workers start together, 300 ms from now (children take a few ms to start).
        .env("START", (now_ns() + 300_000_000).to_string())
        .env(REGION, region)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn a child")
}

/// Read `child`'s lines until one starts with `prefix`; return it.
fn wait_for_line(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("read a child's output");
        assert!(n > 0, "the child ended before printing {prefix:?}");
        if line.starts_with(prefix) {
            return line.trim_end().to_owned();
        }
    }
}

/// Wait for every child; each must exit 0 and print one `RESULT k=v ...` line.
fn results(kids: &mut Kids) -> Vec<HashMap<String, u64>> {
    let mut all = Vec::new();
    for c in &mut kids.0 {
        let mut out = BufReader::new(c.stdout.take().expect("piped"));
        let line = wait_for_line(&mut out, "RESULT");
        let status = c.wait().expect("wait for a child");
        assert!(status.success(), "a child failed: {status}");
        all.push(
            line.split_whitespace()
                .skip(1)
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.parse().expect("a number")))
                .collect(),
        );
    }
    kids.0.clear();
    all
}

fn sum(rs: &[HashMap<String, u64>], key: &str) -> u64 {
    rs.iter().map(|r| r[key]).sum()
}

fn stock() -> BulkheadConfig {
    BulkheadConfig { max_concurrent: 3 }
}

fn witness() -> BulkheadConfig {
    BulkheadConfig {
        max_concurrent: u64::from(u32::MAX),
    }
}

fn breaker() -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        window_size: 20,
        minimum_calls: 10,
        failure_rate_threshold: 0.5,
        open_duration: Nanos::from_millis(2),
        max_open_duration: Nanos::from_millis(2),
        half_open_probes: 3,
        probe_timeout: Nanos::from_millis(100),
        ..CircuitBreakerConfig::default()
    }
}

fn budget() -> RetryBudgetConfig {
    RetryBudgetConfig::TokenBucket(TokenBudgetConfig {
        capacity: 10.0,
        ratio: 0.1,
    })
}

fn limiter() -> LimiterConfig {
    LimiterConfig {
        limit: LimitConfig::Fixed(4),
        ..LimiterConfig::default()
    }
}

fn door() -> AdmissionConfig {
    AdmissionConfig {
        limits: [1; 8],
        ..AdmissionConfig::default()
    }
}

/// A breaker that opens after 2 failures and admits one probe after 1 ms.
fn probe_breaker() -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        window_size: 2,
        minimum_calls: 2,
        open_duration: Nanos::from_millis(1),
        max_open_duration: Nanos::from_millis(1),
        half_open_probes: 1,
        ..CircuitBreakerConfig::default()
    }
}

const WORKERS: usize = 6;

fn bulkhead_cap_holds_across_processes() {
    let s = Scratch::new("procs-bulkhead");
    let r = s.open();
    let g = r.get_or_create::<Bulkhead>("stock", stock()).unwrap();
    let w = r.get_or_create::<Bulkhead>("witness", witness()).unwrap();
    let ops = 20_000;
    let mut kids = Kids(
        (0..WORKERS)
            .map(|i| {
                spawn(
                    "bulkhead",
                    &s.path,
                    &[("OPS", ops.to_string()), ("SEED", i.to_string())],
                )
            })
            .collect(),
    );
    // Look while they run: neither the count nor the holders ever exceed the cap.
    let mut looks = 0;
    while kids.0.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        assert!(g.in_flight() <= 3 && w.in_flight() <= 3);
        looks += 1;
        std::thread::yield_now();
    }
    let rs = results(&mut kids);
    assert!(looks > 0);
    for r in &rs {
        assert!(r["worst"] <= 3, "a child saw {} inside", r["worst"]);
    }
    let st = g.stats();
    assert_eq!(st.acquired, sum(&rs, "acquired"));
    assert_eq!(st.rejected, sum(&rs, "refused"));
    assert_eq!(st.acquired + st.rejected, WORKERS as u64 * ops);
    assert_eq!((st.in_flight, st.released), (0, st.acquired));
    assert!(st.acquired > 0 && st.rejected > 0, "{st:?}");
    assert_eq!(r.stats().permits_held, 0);
}

fn breaker_transitions_are_legal_across_processes() {
    let s = Scratch::new("procs-breaker");
    let r = s.open();
    let g = r
        .get_or_create::<CircuitBreaker<128>>("dep", breaker())
        .unwrap();
    let mut kids = Kids(
        (0..WORKERS)
            .map(|i| {
                spawn(
                    "breaker",
                    &s.path,
                    &[("OPS", "2000".into()), ("SEED", i.to_string())],
                )
            })
            .collect(),
    );
    let rs = results(&mut kids);
    let st = g.stats();
    let state = g.status().state;
    let is = |s: BreakerState| u64::from(state == s);
    // Each state is entered as often as it is left, plus one for the state it is in now
    // (closed is entered once at creation): only legal transitions were counted.
    assert_eq!(
        1 + st.half_open_to_closed,
        st.closed_to_open + is(BreakerState::Closed),
        "{st:?}"
    );
    assert_eq!(
        st.closed_to_open + st.half_open_to_open,
        st.open_to_half_open + is(BreakerState::Open),
        "{st:?}"
    );
    assert_eq!(
        st.open_to_half_open,
        st.half_open_to_closed + st.half_open_to_open + is(BreakerState::HalfOpen),
        "{st:?}"
    );
    assert!(
        st.closed_to_open >= 1 && st.half_open_to_closed >= 1,
        "it cycled: {st:?}"
    );
    // Every permit was reported once and counted once; every refusal counted.
    assert_eq!(
        sum(&rs, "reported"),
        st.successes
            + st.failures
            + st.probe_successes
            + st.probe_failures
            + st.ignored
            + st.discarded,
        "{st:?}"
    );
    assert_eq!(sum(&rs, "probes"), st.probes_admitted);
    assert_eq!(sum(&rs, "rejected_open"), st.rejected_open);
    assert_eq!(sum(&rs, "rejected_half_open"), st.rejected_half_open);
    assert_eq!(r.stats().permits_held, 0);
}

fn budget_tokens_stay_in_bounds_across_processes() {
    let s = Scratch::new("procs-budget");
    let r = s.open();
    let g = r.get_or_create::<RetryBudget>("retries", budget()).unwrap();
    let mut kids = Kids(
        (0..WORKERS)
            .map(|i| {
                spawn(
                    "budget",
                    &s.path,
                    &[("OPS", "20000".into()), ("SEED", i.to_string())],
                )
            })
            .collect(),
    );
    while kids.0.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        let t = g.tokens_micros(Nanos(now_ns()));
        assert!((0..=10_000_000).contains(&t), "{t}");
    }
    let rs = results(&mut kids);
    assert_eq!(sum(&rs, "out_of_bounds"), 0);
    let st = g.stats();
    assert_eq!(st.deposits, sum(&rs, "deposits"));
    assert_eq!(st.withdrawals, sum(&rs, "allowed"));
    assert_eq!(st.refusals, sum(&rs, "refused"));
    // The bucket starts with 10 tokens and earns 0.1 per first attempt: no more retries.
    assert!(st.withdrawals * 10 <= 100 + st.deposits, "{st:?}");
    assert!(st.refusals > 0, "the budget ran dry at some point: {st:?}");
}

fn limiter_counts_add_up_across_processes() {
    let s = Scratch::new("procs-limiter");
    let r = s.open();
    let g = r.get_or_create::<Limiter>("lim", limiter()).unwrap();
    let mut kids = Kids(
        (0..WORKERS)
            .map(|i| {
                spawn(
                    "limiter",
                    &s.path,
                    &[("OPS", "20000".into()), ("SEED", i.to_string())],
                )
            })
            .collect(),
    );
    while kids.0.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        assert!(g.in_flight() <= 4);
    }
    let rs = results(&mut kids);
    assert_eq!(sum(&rs, "over_limit"), 0);
    let st = g.stats();
    assert_eq!(st.acquired, sum(&rs, "acquired"));
    assert_eq!(st.succeeded, sum(&rs, "successes"));
    assert_eq!(st.dropped, sum(&rs, "drops"));
    assert_eq!(st.ignored, sum(&rs, "ignores"));
    assert_eq!(st.rejected(), sum(&rs, "refused"));
    assert_eq!(st.acquired, st.succeeded + st.dropped + st.ignored);
    assert_eq!(st.in_flight, 0);
}

/// The guards a holder takes everything of.
struct Held {
    bulkhead: Shared<Bulkhead>,
    limiter: Shared<Limiter>,
    door: Shared<Admission>,
    breaker: Shared<CircuitBreaker<128>>,
}

fn prepare_holdings(r: &Region) -> Held {
    let held = Held {
        bulkhead: r.get_or_create("stock", stock()).unwrap(),
        limiter: r
            .get_or_create(
                "lim",
                LimiterConfig {
                    limit: LimitConfig::Fixed(2),
                    ..limiter()
                },
            )
            .unwrap(),
        door: r.get_or_create("door", door()).unwrap(),
        breaker: r.get_or_create("probe", probe_breaker()).unwrap(),
    };
    // Open the breaker; its open period ends 1 ms later, and the holder's call is a probe.
    let now = Nanos(now_ns());
    for _ in 0..2 {
        let (t, _) = held.breaker.try_acquire((), now).unwrap();
        held.breaker.report(t, Outcome::Timeout, now).unwrap();
    }
    std::thread::sleep(Duration::from_millis(3));
    held
}

/// Start a holder and wait until it holds everything; returns its permit (slot,
/// generation) of the bulkhead.
fn start_holder(path: &str) -> (Child, (u32, u32)) {
    let mut c = spawn("hold", path, &[]);
    let mut out = BufReader::new(c.stdout.take().expect("piped"));
    let line = wait_for_line(&mut out, "HELD");
    let nums: Vec<u32> = line
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    (c, (nums[0], nums[1]))
}

fn assert_all_back(held: &Held) {
    assert_eq!(held.limiter.in_flight(), 0);
    assert_eq!(
        held.limiter.stats().ignored,
        2,
        "cancelled: freed without a sample"
    );
    assert_eq!(held.door.in_flight(), 0);
    let b = held.breaker.stats();
    assert_eq!(
        (b.probe_failures, b.half_open_to_open),
        (1, 1),
        "a cancelled probe failed"
    );
    assert_eq!(held.breaker.status().state, BreakerState::Open);
}

fn a_killed_holder_is_reclaimed_when_its_guard_is_full() {
    let s = Scratch::new("procs-kill");
    let r = s.open_with(RegionOptions {
        reclaim_interval: Nanos(0),
        ..RegionOptions::default()
    });
    let held = prepare_holdings(&r);
    let (mut c, (slot, generation)) = start_holder(&s.path);
    let _kids = Kids(Vec::new());
    // The holder is alive: a full bulkhead stays full, a taken probe stays taken.
    let now = Nanos(now_ns());
    assert!(matches!(
        held.bulkhead.try_acquire((), now),
        Err(Refusal::Rejected(_))
    ));
    assert!(matches!(
        held.breaker.try_acquire((), now),
        Err(Refusal::Rejected(_))
    ));
    assert_eq!(r.stats().reclaimed_permits, 0);
    assert_eq!(r.stats().permits_held, 7);

    c.kill().unwrap(); // SIGKILL
    c.wait().unwrap();
    // The next acquire finds the bulkhead full, reclaims the dead holder's permits (all
    // of them, in every guard) and is let in.
    let (mine, _) = held
        .bulkhead
        .try_acquire((), Nanos(now_ns()))
        .expect("reclaimed");
    assert_eq!(r.stats().reclaimed_permits, 7);
    assert_eq!(held.bulkhead.in_flight(), 1);
    assert_all_back(&held);
    // The dead holder's permit, if it were ever presented, was reported already.
    let theirs = PermitToken {
        guard: held.bulkhead.id(),
        slot,
        generation,
    };
    assert_eq!(
        held.bulkhead
            .report(theirs, Outcome::Success, Nanos(now_ns()))
            .unwrap_err(),
        GuardsResult::PermitAlreadyReported
    );
    held.bulkhead
        .report(mine, Outcome::Success, Nanos(now_ns()))
        .unwrap();
    assert_eq!(r.stats().permits_held, 0);
}

fn a_killed_holder_is_reclaimed_on_open_and_on_request() {
    let s = Scratch::new("procs-kill2");
    let r = s.open();
    let held = prepare_holdings(&r);

    // Killed and not yet reaped (a zombie): already dead to the region.
    let (mut c, _) = start_holder(&s.path);
    c.kill().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let reopened = s.open(); // opening reclaims
    assert_eq!(reopened.stats().reclaimed_permits, 7);
    assert_eq!(held.bulkhead.in_flight(), 0);
    assert_all_back(&held);
    c.wait().unwrap();

    // Explicitly, with `reclaim`.
    std::thread::sleep(Duration::from_millis(3)); // the breaker's open period ends again
    let (mut c, _) = start_holder(&s.path);
    c.kill().unwrap();
    c.wait().unwrap();
    let done = r.reclaim(Nanos(now_ns()));
    assert_eq!((done.permits, done.claims), (7, 0));
    assert_eq!(held.bulkhead.in_flight(), 0);
    assert_eq!(held.limiter.in_flight(), 0);
    assert_eq!(r.stats().permits_held, 0);
    assert_eq!(r.reclaim(Nanos(now_ns())).permits, 0, "nothing twice");
}

fn a_killed_creator_is_taken_over_and_a_live_one_waited_for() {
    let s = Scratch::new("procs-stall");
    let _ = s.open(); // the region exists before the child
    let mut c = spawn("stall", &s.path, &[]);
    let mut out = BufReader::new(c.stdout.take().expect("piped"));
    wait_for_line(&mut out, "CREATING");
    std::thread::sleep(Duration::from_millis(300)); // it is inside its pause now
    let impatient = s.open_with(RegionOptions {
        wait_timeout: Nanos::from_millis(50),
        ..RegionOptions::default()
    });
    let e = impatient
        .get_or_create::<Bulkhead>("stalled", stock())
        .unwrap_err();
    assert_eq!(e.code, GuardsResult::RegionTimeout, "{e}");
    c.kill().unwrap();
    c.wait().unwrap();
    let g = impatient
        .get_or_create::<Bulkhead>("stalled", stock())
        .expect("taken over");
    assert_eq!(impatient.stats().takeovers, 1);
    assert_eq!(impatient.stats().guards, 1);
    let (t, _) = g.try_acquire((), Nanos(1)).unwrap();
    g.report(t, Outcome::Success, Nanos(2)).unwrap();
}

fn processes_racing_to_create_a_region_end_with_one_of_each() {
    let s = Scratch::new("procs-race");
    let start = now_ns() + 400_000_000;
    let n = 8;
    let mut kids = Kids(
        (0..n)
            .map(|_| spawn("race", &s.path, &[("START_AT", start.to_string())]))
            .collect(),
    );
    let rs = results(&mut kids);
    for key in [
        "a_index", "a_offset", "b_index", "b_offset", "c_index", "c_offset",
    ] {
        assert!(rs.iter().all(|r| r[key] == rs[0][key]), "{key}: {rs:?}");
    }
    let r = s.open();
    let st = r.stats();
    assert_eq!(st.guards, 3);
    let guards = r.guards();
    assert_eq!(guards.len(), 3);
    // Nothing was built twice: the data used is exactly the three guards.
    assert_eq!(guards.iter().map(|g| g.size).sum::<u64>(), st.data_used);
}

// ---- Child side.

fn env_u64(key: &str) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A small deterministic generator (xorshift), per child.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn child(role: &str) {
    let path = std::env::var(REGION).expect("the region path");
    let ops = env_u64("OPS");
    let mut gen = Gen(0x9e37_79b9_7f4a_7c15 ^ env_u64("SEED").wrapping_mul(0x2545_f491_4f6c_dd1d));
    let start_together = || {
        let start = env_u64("START");
        while now_ns() < start {
            std::thread::sleep(Duration::from_micros(100));
        }
    };
    match role {
        "bulkhead" => {
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            let g = r.get_or_create::<Bulkhead>("stock", stock()).unwrap();
            let w = r.get_or_create::<Bulkhead>("witness", witness()).unwrap();
            start_together();
            let (mut acquired, mut refused, mut worst) = (0u64, 0u64, 0u64);
            for n in 0..ops {
                match g.try_acquire((), Nanos(n)) {
                    Ok((t, _)) => {
                        acquired += 1;
                        // Count this process in as a holder; no more than the cap can be.
                        let me = w.try_acquire_scoped().expect("the witness has no cap");
                        worst = worst.max(w.in_flight()).max(g.in_flight());
                        for _ in 0..(gen.next() % 64) {
                            std::hint::spin_loop();
                        }
                        drop(me);
                        g.report(t, Outcome::Success, Nanos(n)).unwrap();
                    }
                    Err(Refusal::Rejected(_)) => refused += 1,
                    Err(Refusal::Failed(f)) => panic!("{f}"),
                }
            }
            println!("RESULT acquired={acquired} refused={refused} worst={worst}");
        }
        "breaker" => {
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            let g = r
                .get_or_create::<CircuitBreaker<128>>("dep", breaker())
                .unwrap();
            start_together();
            let (mut reported, mut probes, mut open, mut half) = (0u64, 0u64, 0u64, 0u64);
            for _ in 0..ops {
                let now = Nanos(now_ns());
                match g.try_acquire((), now) {
                    Ok((t, view)) => {
                        probes += u64::from(view.probe_timeout.is_some());
                        // 60 % failures: enough to open it over and over; probes pass
                        // often enough to close it again.
                        let outcome = match gen.next() % 10 {
                            0..=5 if view.probe_timeout.is_none() => Outcome::Timeout,
                            0..=2 => Outcome::Timeout,
                            6 => Outcome::Cancelled,
                            _ => Outcome::Success,
                        };
                        g.report(t, outcome, Nanos(now_ns())).unwrap();
                        reported += 1;
                    }
                    Err(Refusal::Rejected(e)) => match e.reason.name() {
                        "open" => open += 1,
                        _ => half += 1,
                    },
                    Err(Refusal::Failed(f)) => panic!("{f}"),
                }
                std::thread::sleep(Duration::from_micros(gen.next() % 50));
            }
            println!(
                "RESULT reported={reported} probes={probes} rejected_open={open} rejected_half_open={half}"
            );
        }
        "budget" => {
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            let g = r.get_or_create::<RetryBudget>("retries", budget()).unwrap();
            start_together();
            let (mut deposits, mut allowed, mut refused, mut bad) = (0u64, 0u64, 0u64, 0u64);
            for _ in 0..ops {
                let now = Nanos(now_ns());
                // A first attempt; now and then (a third of the time) a retry after it.
                g.deposit(now);
                deposits += 1;
                if gen.next() % 3 == 0 {
                    match g.withdraw(now, RetryCause::Timeout) {
                        Some(_) => allowed += 1,
                        None => refused += 1,
                    }
                }
                let t = g.tokens_micros(now);
                if !(0..=10_000_000).contains(&t) {
                    bad += 1;
                }
            }
            println!(
                "RESULT deposits={deposits} allowed={allowed} refused={refused} out_of_bounds={bad}"
            );
        }
        "limiter" => {
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            let g = r.get_or_create::<Limiter>("lim", limiter()).unwrap();
            start_together();
            let mut c = [0u64; 6]; // acquired, successes, drops, ignores, refused, over
            for n in 0..ops {
                match g.try_acquire(Priority::CRITICAL, Nanos(n)) {
                    Ok((t, _)) => {
                        c[0] += 1;
                        if g.in_flight() > 4 {
                            c[5] += 1;
                        }
                        let (outcome, k) = match gen.next() % 3 {
                            0 => (Outcome::Success, 1),
                            1 => (Outcome::Timeout, 2),
                            _ => (Outcome::ConnectionError, 3),
                        };
                        g.report(t, outcome, Nanos(n + 1)).unwrap();
                        c[k] += 1;
                    }
                    Err(Refusal::Rejected(_)) => c[4] += 1,
                    Err(Refusal::Failed(f)) => panic!("{f}"),
                }
            }
            println!(
                "RESULT acquired={} successes={} drops={} ignores={} refused={} over_limit={}",
                c[0], c[1], c[2], c[3], c[4], c[5]
            );
        }
        "hold" => {
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            let held = Held {
                bulkhead: r.attach("stock").unwrap(),
                limiter: r.attach("lim").unwrap(),
                door: r.attach("door").unwrap(),
                breaker: r.attach("probe").unwrap(),
            };
            let now = Nanos(now_ns());
            let mut first = None;
            for _ in 0..3 {
                let (t, _) = held.bulkhead.try_acquire((), now).unwrap();
                first.get_or_insert(t);
            }
            for _ in 0..2 {
                let _ = held.limiter.try_acquire(Priority::CRITICAL, now).unwrap();
            }
            let _ = held.door.try_acquire(Priority::CRITICAL, now).unwrap();
            let (_, view) = held.breaker.try_acquire((), now).unwrap();
            assert!(view.probe_timeout.is_some(), "the holder has the probe");
            let t = first.unwrap();
            println!("HELD {} {}", t.slot, t.generation);
            let _ = std::io::stdout().flush();
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "stall" => {
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            pause_while_creating(Duration::from_secs(60));
            println!("CREATING");
            let _ = std::io::stdout().flush();
            let _ = r.get_or_create::<Bulkhead>("stalled", stock());
            println!("RESULT created=1");
        }
        "race" => {
            // Make whoever creates a guard slow, so the others wait for it.
            pause_while_creating(Duration::from_millis(20));
            let start = env_u64("START_AT");
            while now_ns() < start {
                std::hint::spin_loop();
            }
            let r = Region::open(&path, &RegionOptions::default()).unwrap();
            let a = r.get_or_create::<Bulkhead>("a", stock()).unwrap();
            let b = r
                .get_or_create::<CircuitBreaker<128>>("b", breaker())
                .unwrap();
            let c = r.get_or_create::<Limiter>("c", limiter()).unwrap();
            let place = |name: &str| {
                let g = r.guards().into_iter().find(|g| g.name == name).unwrap();
                (g.index, g.offset)
            };
            let ((ai, ao), (bi, bo), (ci, co)) = (place("a"), place("b"), place("c"));
            let _ = (a.id(), b.id(), c.id());
            println!(
                "RESULT a_index={ai} a_offset={ao} b_index={bi} b_offset={bo} c_index={ci} c_offset={co}"
            );
        }
        other => panic!("unknown role {other}"),
    }
}
