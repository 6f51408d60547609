//! The fleet agent against a real `redis-server`, started by each test on a free loopback
//! port (`make redis-server` installs Debian's package when it is missing) and killed at
//! the end. Waits poll a condition a bounded number of times; assertions count.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use guards::fleet::{Fleet, FleetConfig, FleetError, FleetEvent};
use guards_core::{Bulkhead, BulkheadConfig};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(extra: &[&str]) -> Redis {
        Redis::on_port(free_port(), extra)
    }

    fn on_port(port: u16, extra: &[&str]) -> Redis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server not found: run `make redis-server` (installs it)");
        let r = Redis { child, port };
        assert!(
            poll(400, || TcpStream::connect(("127.0.0.1", port)).is_ok()),
            "redis-server did not listen on {port}"
        );
        r
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn con(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    fn kill(mut self) -> u16 {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.port
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Poll `f` every 25 ms, at most `n` times.
fn poll(n: u32, mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..n {
        if f() {
            return true;
        }
        thread::sleep(Duration::from_millis(25));
    }
    false
}

fn config(url: &str, service: &str, member: &str) -> FleetConfig {
    let mut c = FleetConfig::new(url, service, member);
    c.sync_interval = Duration::from_millis(50);
    c.ttl = Duration::from_millis(900);
    c.stale_after = Duration::from_millis(400);
    c.io_timeout = Duration::from_millis(200);
    c
}

struct Member {
    fleet: Fleet,
    bulkhead: Arc<Bulkhead>,
}

fn member(url: &str, service: &str, name: &str, allowance: u64) -> Member {
    member_with(config(url, service, name), allowance)
}

fn member_with(c: FleetConfig, allowance: u64) -> Member {
    let fleet = Fleet::join(c).unwrap();
    let bulkhead = Arc::new(Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap());
    fleet
        .attach_bulkhead("stock", allowance, Arc::clone(&bulkhead))
        .unwrap();
    Member { fleet, bulkhead }
}

fn shares(ms: &[&Member]) -> Vec<u64> {
    ms.iter().map(|m| m.bulkhead.max_concurrent()).collect()
}

/// Worker threads hammering every member's bulkhead, counting the calls in flight across
/// the fleet independently of the guards.
struct Load {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicU64>,
    served: Arc<AtomicU64>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Load {
    fn new() -> Self {
        Load {
            stop: Arc::new(AtomicBool::new(false)),
            max: Arc::new(AtomicU64::new(0)),
            served: Arc::new(AtomicU64::new(0)),
            threads: Vec::new(),
        }
    }

    fn on(&mut self, b: &Arc<Bulkhead>, in_flight: &Arc<AtomicU64>, threads: usize) {
        for _ in 0..threads {
            let (b, now, stop, max, served) = (
                Arc::clone(b),
                Arc::clone(in_flight),
                Arc::clone(&self.stop),
                Arc::clone(&self.max),
                Arc::clone(&self.served),
            );
            self.threads.push(thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match b.try_acquire() {
                        Ok(p) => {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            max.fetch_max(n, Ordering::SeqCst);
                            served.fetch_add(1, Ordering::SeqCst);
                            thread::sleep(Duration::from_millis(2));
                            now.fetch_sub(1, Ordering::SeqCst);
                            b.release(p);
                        }
                        Err(_) => thread::sleep(Duration::from_millis(1)),
                    }
                }
            }));
        }
    }

    fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().unwrap();
        }
        (
            self.max.load(Ordering::SeqCst),
            self.served.load(Ordering::SeqCst),
        )
    }
}

#[test]
fn members_share_one_allowance_and_rebalance() {
    let redis = Redis::start(&[]);
    let url = redis.url();
    let a = member(&url, "shop", "a", 12);
    let b = member(&url, "shop", "b", 12);
    let c = member(&url, "shop", "c", 12);
    let in_flight = Arc::new(AtomicU64::new(0));
    let mut load = Load::new();
    for m in [&a, &b, &c] {
        load.on(&m.bulkhead, &in_flight, 6);
    }
    assert!(
        poll(400, || shares(&[&a, &b, &c]) == [4, 4, 4]),
        "{:?}",
        shares(&[&a, &b, &c])
    );
    // A fourth joins: 12 over 4 members, reached by shrinking first, growing after.
    let mut d = member(&url, "shop", "d", 12);
    load.on(&d.bulkhead, &in_flight, 6);
    assert!(
        poll(400, || shares(&[&a, &b, &c, &d]) == [3, 3, 3, 3]),
        "{:?}",
        shares(&[&a, &b, &c, &d])
    );
    // d leaves: the others grow back to 4 each.
    d.fleet.leave();
    d.bulkhead.set_max_concurrent(0).unwrap();
    assert!(
        poll(400, || shares(&[&a, &b, &c]) == [4, 4, 4]),
        "{:?}",
        shares(&[&a, &b, &c])
    );
    let (max, served) = load.stop();
    assert!(served > 0);
    assert!(
        max <= 12,
        "{max} calls in flight over a fleet allowance of 12"
    );
    let ev = a.fleet.events();
    assert!(ev.contains(&FleetEvent::MemberJoined("d".into())), "{ev:?}");
    assert!(ev.contains(&FleetEvent::MemberLeft("d".into())), "{ev:?}");
    assert!(ev
        .iter()
        .any(|e| matches!(e, FleetEvent::ShareChanged { to: 3, .. })));
    let s = a.fleet.stats();
    assert_eq!(
        (s.members, s.allowances[0].share, s.allowances[0].fair),
        (3, 4, 4)
    );
    assert!(s.syncs > 0 && s.connected);
}

#[test]
fn a_crashed_member_record_expires_and_the_share_returns() {
    let redis = Redis::start(&[]);
    let url = redis.url();
    let mut con = redis.con();
    // A member that crashed holding 6 of 10: its record as it left it, with its TTL.
    let key = "guards:fleet:{shop}:m:crashed";
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg("w")
        .arg("1")
        .arg("h:stock")
        .arg("6")
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("PEXPIRE")
        .arg(key)
        .arg(3000)
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("SADD")
        .arg("guards:fleet:{shop}:members")
        .arg("crashed")
        .query(&mut con)
        .unwrap();
    let a = member(&url, "shop", "a", 10);
    let b = member(&url, "shop", "b", 10);
    // While its record lives, a and b share only what it leaves (4); sampled until it
    // expires, each sample checked against a record seen alive after the shares were read.
    let mut samples = 0;
    let mut best = 0;
    assert!(poll(400, || {
        let sum: u64 = shares(&[&a, &b]).iter().sum();
        let ttl: i64 = redis::cmd("PTTL").arg(key).query(&mut con).unwrap();
        if ttl > 0 {
            assert!(
                sum <= 4,
                "{sum} granted beside a live record holding 6 of 10"
            );
            samples += 1;
            best = best.max(sum);
        }
        ttl < 0
    }));
    assert!(samples > 0);
    assert_eq!(best, 4, "the room the crashed member left was not used");
    // Once it expires, the whole allowance returns: 5 and 5.
    assert!(poll(400, || shares(&[&a, &b]) == [5, 5]));
    assert!(a
        .fleet
        .events()
        .contains(&FleetEvent::MemberLeft("crashed".into())));
}

#[test]
fn redis_killed_and_restarted_mid_load() {
    let redis = Redis::start(&[]);
    let url = redis.url();
    let a = member(&url, "shop", "a", 8);
    let b = member(&url, "shop", "b", 8);
    assert!(poll(400, || shares(&[&a, &b]) == [4, 4]));
    let in_flight = Arc::new(AtomicU64::new(0));
    let mut load = Load::new();
    load.on(&a.bulkhead, &in_flight, 4);
    load.on(&b.bulkhead, &in_flight, 4);
    let port = redis.kill();
    assert!(poll(400, || a.fleet.stats().fallen_back
        && b.fleet.stats().fallen_back));
    // The fallback: 8 ÷ 2 last known members = 4 each; the guards keep serving.
    assert_eq!(shares(&[&a, &b]), [4, 4]);
    let served_before = load.served.load(Ordering::SeqCst);
    assert!(poll(400, || load.served.load(Ordering::SeqCst)
        > served_before + 50));
    let redis = Redis::on_port(port, &[]);
    assert!(poll(400, || a.fleet.stats().connected
        && b.fleet.stats().connected));
    // The new Redis is empty: both rejoin as newcomers and grow back to 4 each.
    assert!(poll(400, || shares(&[&a, &b]) == [4, 4]
        && !a.fleet.stats().fallen_back));
    let (max, _) = load.stop();
    assert!(max <= 8, "{max} in flight");
    let ev = a.fleet.events();
    assert!(
        ev.iter().any(|e| matches!(e, FleetEvent::RedisLost(_))),
        "{ev:?}"
    );
    assert!(ev
        .iter()
        .any(|e| matches!(e, FleetEvent::FellBack { share: 4, .. })));
    assert!(ev.contains(&FleetEvent::RedisRegained));
    assert!(a.fleet.stats().sync_errors > 0);
    drop(redis);
}

/// A TCP proxy in front of Redis that delays every chunk while `slow` is set.
fn slow_proxy(to: u16, slow: Arc<AtomicBool>, stop: Arc<AtomicBool>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            let Ok((client, _)) = l.accept() else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            client.set_nonblocking(false).unwrap();
            let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                continue;
            };
            for (mut from, mut into) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let (slow, stop) = (Arc::clone(&slow), Arc::clone(&stop));
                from.set_read_timeout(Some(Duration::from_millis(100)))
                    .unwrap();
                thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while !stop.load(Ordering::SeqCst) {
                        match from.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                if slow.load(Ordering::SeqCst) {
                                    thread::sleep(Duration::from_millis(600));
                                }
                                if into.write_all(&buf[..n]).is_err() {
                                    break;
                                }
                            }
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => break,
                        }
                    }
                    let _ = into.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    port
}

#[test]
fn redis_answering_slowly() {
    let redis = Redis::start(&[]);
    let (slow, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let port = slow_proxy(redis.port, Arc::clone(&slow), Arc::clone(&stop));
    let url = format!("redis://127.0.0.1:{port}");
    let a = member(&url, "shop", "a", 6);
    let b = member(&redis.url(), "shop", "b", 6);
    assert!(poll(400, || shares(&[&a, &b]) == [3, 3]));
    slow.store(true, Ordering::SeqCst);
    assert!(poll(400, || a.fleet.stats().fallen_back));
    // a keeps serving on its fallback share (6 ÷ 2 = 3) while Redis is slow for it.
    assert_eq!(a.bulkhead.max_concurrent(), 3);
    let p = a.bulkhead.try_acquire().unwrap();
    a.bulkhead.release(p);
    slow.store(false, Ordering::SeqCst);
    assert!(poll(400, || {
        let s = a.fleet.stats();
        s.connected && !s.fallen_back && shares(&[&a, &b]) == [3, 3]
    }));
    assert!(a.fleet.stats().sync_errors > 0);
    assert!(a.fleet.events().contains(&FleetEvent::RedisRegained));
    stop.store(true, Ordering::SeqCst);
}

#[test]
fn two_fleets_on_one_redis_are_independent() {
    let redis = Redis::start(&[]);
    let url = redis.url();
    let a1 = member(&url, "shop", "a1", 10);
    let a2 = member(&url, "shop", "a2", 10);
    let b1 = member(&url, "search", "a1", 10);
    assert!(poll(400, || shares(&[&a1, &a2, &b1]) == [5, 5, 10]));
    assert_eq!(b1.fleet.stats().members, 1);
}

#[test]
fn bad_urls_auth_and_settings() {
    let bad = |url: &str| Fleet::join(config(url, "shop", "a")).unwrap_err();
    assert!(
        matches!(bad("http://nope"), FleetError::BadUrl(_)),
        "{:?}",
        bad("http://nope")
    );
    assert!(matches!(bad("not a url"), FleetError::BadUrl(_)));
    let closed = free_port();
    assert!(matches!(
        bad(&format!("redis://127.0.0.1:{closed}")),
        FleetError::Unavailable(_)
    ));
    let redis = Redis::start(&["--requirepass", "s3cret"]);
    let e = bad(&redis.url());
    assert!(matches!(e, FleetError::Auth(_)), "{e:?}");
    let e = bad(&format!("redis://:wrong@127.0.0.1:{}", redis.port));
    assert!(matches!(e, FleetError::Auth(_)), "{e:?}");
    let ok = member(
        &format!("redis://:s3cret@127.0.0.1:{}", redis.port),
        "shop",
        "a",
        4,
    );
    assert!(poll(400, || ok.bulkhead.max_concurrent() == 4));
    // Settings are checked before any connection.
    let mut c = config(&redis.url(), "shop", "a");
    c.member = "bad name".into();
    assert!(matches!(
        Fleet::join(c),
        Err(FleetError::Config("member", _))
    ));
    let mut c = config(&redis.url(), "shop", "a");
    c.stale_after = c.ttl;
    assert!(matches!(
        Fleet::join(c),
        Err(FleetError::Config("stale_after", _))
    ));
    let e = ok
        .fleet
        .attach_bulkhead("stock", 4, Arc::clone(&ok.bulkhead))
        .unwrap_err();
    assert!(matches!(e, FleetError::Duplicate(_)));
    let e = ok
        .fleet
        .attach_bulkhead("other", 0, Arc::clone(&ok.bulkhead))
        .unwrap_err();
    assert!(matches!(e, FleetError::Config("allowance", _)));
}

#[test]
fn hostile_values_in_redis_stay_bounded() {
    let redis = Redis::start(&[]);
    let url = redis.url();
    let a = member(&url, "shop", "a", 10);
    let b = member(&url, "shop", "b", 10);
    assert!(poll(400, || shares(&[&a, &b]) == [5, 5]));
    let mut con = redis.con();
    for (name, fields) in [
        (
            "garbage",
            vec![("w", "lots"), ("h:stock", "not a number"), ("c:stock", "x")],
        ),
        (
            "huge",
            vec![
                ("w", "4294967296000"),
                ("h:stock", "18446744073709551615999"),
            ],
        ),
    ] {
        let key = format!("guards:fleet:{{shop}}:m:{name}");
        for (k, v) in fields {
            let _: () = redis::cmd("HSET")
                .arg(&key)
                .arg(k)
                .arg(v)
                .query(&mut con)
                .unwrap();
        }
        let _: () = redis::cmd("PEXPIRE")
            .arg(&key)
            .arg(2000)
            .query(&mut con)
            .unwrap();
        let _: () = redis::cmd("SADD")
            .arg("guards:fleet:{shop}:members")
            .arg(name)
            .query(&mut con)
            .unwrap();
    }
    // A garbage version too: claims against it fail, so nobody grows on it.
    let _: () = redis::cmd("SET")
        .arg("guards:fleet:{shop}:v:stock")
        .arg("zzz")
        .query(&mut con)
        .unwrap();
    let mut worst = 0;
    assert!(poll(400, || {
        let s = shares(&[&a, &b]);
        worst = worst.max(s.iter().sum::<u64>());
        a.fleet.stats().members == 4 && s.iter().all(|&x| x <= 3)
    }));
    // The hostile records look like members holding everything: nobody may grow, every
    // share stays within its fair share of the four (3, 3, 2, 2 of 10).
    for m in [&a, &b] {
        let s = m.fleet.stats();
        let al = &s.allowances[0];
        assert!(al.share <= al.fair && al.fair <= 3, "{al:?}");
    }
    assert!(worst <= 10);
    // Cleaned up (deleted; the version reset): the honest members grow back.
    let _: () = redis::cmd("DEL")
        .arg("guards:fleet:{shop}:m:garbage")
        .arg("guards:fleet:{shop}:m:huge")
        .arg("guards:fleet:{shop}:v:stock")
        .query(&mut con)
        .unwrap();
    assert!(
        poll(400, || shares(&[&a, &b]) == [5, 5]),
        "{:?}",
        shares(&[&a, &b])
    );
}

#[test]
fn limiters_and_token_budgets_follow_their_shares() {
    use guards_core::retry_budget::{TokenBudget, TokenBudgetConfig};
    use guards_core::{Limiter, LimiterConfig, Nanos, Outcome, Priority};
    let redis = Redis::start(&[]);
    let url = redis.url();
    let join = |name: &str| {
        let fleet = Fleet::join(config(&url, "shop", name)).unwrap();
        let limiter = Arc::new(Limiter::new(LimiterConfig::default()).unwrap());
        let budget = Arc::new(
            TokenBudget::new(TokenBudgetConfig {
                capacity: 100.0,
                ratio: 1.0,
            })
            .unwrap(),
        );
        fleet
            .attach_limiter("search", 9, Arc::clone(&limiter))
            .unwrap();
        fleet
            .attach_token_budget("retries", 30, Arc::clone(&budget))
            .unwrap();
        // Attached: nothing is admitted and the full bucket is emptied until a share arrives.
        (fleet, limiter, budget)
    };
    let mut ms = vec![join("a"), join("b"), join("c")];
    let ceilings = |ms: &[(Fleet, Arc<Limiter>, Arc<TokenBudget>)]| -> Vec<Option<u64>> {
        ms.iter().map(|m| m.1.max_limit()).collect()
    };
    let bursts = |ms: &[(Fleet, Arc<Limiter>, Arc<TokenBudget>)]| -> Vec<u64> {
        ms.iter()
            .map(|m| m.2.capacity_micros() / 1_000_000)
            .collect()
    };
    assert!(
        poll(400, || ceilings(&ms) == [Some(3); 3]
            && bursts(&ms) == [10; 3]),
        "{:?} {:?}",
        ceilings(&ms),
        bursts(&ms)
    );
    // Load on the limiters, counted independently of them.
    let stop = Arc::new(AtomicBool::new(false));
    let now = Arc::new(AtomicU64::new(0));
    let max = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let spawn_load = |l: &Arc<Limiter>, threads: &mut Vec<thread::JoinHandle<u64>>| {
        for _ in 0..4 {
            let (l, stop, now, max) = (
                Arc::clone(l),
                Arc::clone(&stop),
                Arc::clone(&now),
                Arc::clone(&max),
            );
            threads.push(thread::spawn(move || {
                let t0 = std::time::Instant::now();
                let mut served = 0;
                while !stop.load(Ordering::SeqCst) {
                    let at = |t: std::time::Instant| Nanos(t.duration_since(t0).as_nanos() as u64);
                    match l.try_acquire(at(std::time::Instant::now()), Priority::CRITICAL) {
                        Ok(p) => {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            max.fetch_max(n, Ordering::SeqCst);
                            thread::sleep(Duration::from_millis(2));
                            now.fetch_sub(1, Ordering::SeqCst);
                            l.report(p, Outcome::Success, at(std::time::Instant::now()));
                            served += 1;
                        }
                        Err(_) => thread::sleep(Duration::from_millis(1)),
                    }
                }
                served
            }));
        }
    };
    for m in &ms {
        spawn_load(&m.1, &mut threads);
    }
    // Deposits fill each bucket to its share, no further.
    for m in &ms {
        for _ in 0..50 {
            m.2.deposit();
        }
    }
    let balance = |ms: &[(Fleet, Arc<Limiter>, Arc<TokenBudget>)]| -> u64 {
        ms.iter().map(|m| m.2.tokens_micros()).sum::<u64>()
    };
    assert_eq!(balance(&ms), 30_000_000);
    // A fourth member: the maximum 9 and the burst 30 split four ways, never summing above.
    ms.push(join("d"));
    spawn_load(&ms[3].1, &mut threads);
    let fair = |ms: &[(Fleet, Arc<Limiter>, Arc<TokenBudget>)]| {
        let c: Vec<u64> = ceilings(ms).iter().map(|c| c.unwrap()).collect();
        c.iter().sum::<u64>() == 9
            && c.iter().all(|&c| c >= 2)
            && bursts(ms).iter().sum::<u64>() == 30
            && bursts(ms).iter().all(|&b| b >= 7)
    };
    let mut samples = 0;
    assert!(poll(400, || {
        // No deposits meanwhile: balances only fall (shrinks clamp them), so this sum is
        // exact even though the members are read one after another.
        samples += 1;
        assert!(balance(&ms) <= 30_000_000, "{} micro-tokens", balance(&ms));
        fair(&ms)
    }));
    assert!(samples > 0);
    for m in &ms {
        for _ in 0..50 {
            m.2.deposit();
        }
    }
    assert_eq!(balance(&ms), 30_000_000);
    stop.store(true, Ordering::SeqCst);
    let served: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(served > 0);
    let max = max.load(Ordering::SeqCst);
    assert!(max <= 9, "{max} calls in flight over a fleet maximum of 9");
    // A burst above a token budget's range is refused at attach.
    let e = ms[0]
        .0
        .attach_token_budget("big", 2_000_000_000, Arc::clone(&ms[0].2))
        .unwrap_err();
    assert!(matches!(e, FleetError::Config("allowance", _)), "{e:?}");
}

/// The member process of `a_member_killed_with_sigkill_gives_its_share_back`: runs only when
/// the test binary is started again with `GUARDS_FLEET_CHILD` set to a Redis URL.
#[test]
fn fleet_child_member() {
    let Ok(url) = std::env::var("GUARDS_FLEET_CHILD") else {
        return;
    };
    let m = member(&url, "shop", "child", 10);
    let in_flight = Arc::new(AtomicU64::new(0));
    let mut load = Load::new();
    load.on(&m.bulkhead, &in_flight, 4);
    // Killed by the parent long before this; bounded in case the parent died first.
    thread::sleep(Duration::from_secs(30));
    let _ = load.stop();
}

#[test]
fn a_member_killed_with_sigkill_gives_its_share_back() {
    let redis = Redis::start(&[]);
    let url = redis.url();
    let a = member(&url, "shop", "a", 10);
    let b = member(&url, "shop", "b", 10);
    assert!(poll(400, || shares(&[&a, &b]) == [5, 5]));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fleet_child_member", "--nocapture"])
        .env("GUARDS_FLEET_CHILD", &url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The child joins and takes its share: a and b shrink to leave it room.
    let mut con = redis.con();
    let child_held = |con: &mut redis::Connection| -> u64 {
        let v: Option<String> = redis::cmd("HGET")
            .arg("guards:fleet:{shop}:m:child")
            .arg("h:stock")
            .query(con)
            .unwrap();
        v.and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    assert!(
        poll(400, || a.fleet.stats().members == 3
            && child_held(&mut con) >= 3
            && shares(&[&a, &b]).iter().sum::<u64>()
                + child_held(&mut con)
                <= 10),
        "{:?} child {}",
        shares(&[&a, &b]),
        child_held(&mut con)
    );
    child.kill().unwrap(); // SIGKILL: no leave, no cleanup
    let _ = child.wait();
    // Its record expires after the TTL, and its share returns.
    assert!(
        poll(400, || shares(&[&a, &b]) == [5, 5]),
        "{:?}",
        shares(&[&a, &b])
    );
    assert!(a
        .fleet
        .events()
        .contains(&FleetEvent::MemberLeft("child".into())));
}

// ---- Breaker evidence ----

use guards::fleet::BreakerStats;
use guards_core::circuit_breaker::{
    BreakerState, CircuitBreaker, CircuitBreakerConfig, WindowKind,
};
use guards_core::fleet::MAX_WINDOW_CALLS;
use guards_core::Nanos;

fn now() -> Nanos {
    Nanos(guards::clock::now_ns())
}

/// A count window of 50 calls judged from 20, opening at 30 % failures for a minute.
fn breaker() -> Arc<CircuitBreaker> {
    Arc::new(
        CircuitBreaker::new(CircuitBreakerConfig {
            window_kind: WindowKind::Count,
            window_size: 50,
            minimum_calls: 20,
            failure_rate_threshold: 0.3,
            slow_call_duration: Nanos::MAX,
            open_duration: Nanos::from_secs(60),
            max_open_duration: Nanos::from_secs(60),
            ..CircuitBreakerConfig::default()
        })
        .unwrap(),
    )
}

struct BreakerMember {
    fleet: Fleet,
    breaker: Arc<CircuitBreaker>,
}

fn breaker_member(url: &str, service: &str, name: &str) -> BreakerMember {
    let fleet = Fleet::join(config(url, service, name)).unwrap();
    let breaker = breaker();
    fleet.attach_breaker("pay", Arc::clone(&breaker)).unwrap();
    BreakerMember { fleet, breaker }
}

/// `calls` calls, `failures` of them failed; calls the breaker refuses are skipped.
fn calls(b: &CircuitBreaker, calls: u64, failures: u64) {
    for i in 0..calls {
        if let Ok(p) = b.try_acquire(now()) {
            if i < failures {
                let _ = b.on_failure(p, now());
            } else {
                let _ = b.on_success(p, now());
            }
        }
    }
}

fn pay(m: &BreakerMember) -> BreakerStats {
    m.fleet
        .stats()
        .breakers
        .into_iter()
        .find(|b| b.name == "pay")
        .unwrap()
}

/// Wait until `m` has synced `n` more times (bounded).
fn more_syncs(m: &BreakerMember, n: u64) {
    let start = m.fleet.stats().syncs;
    assert!(poll(400, || m.fleet.stats().syncs >= start + n), "no syncs");
}

#[test]
fn members_with_few_calls_open_on_the_fleets_evidence() {
    let r = Redis::start(&[]);
    let url = r.url();
    let a = breaker_member(&url, "brk", "a");
    let b = breaker_member(&url, "brk", "b");
    let c = breaker_member(&url, "brk", "c");
    let d = breaker_member(&url, "brk", "d");
    // A fails 30 calls (it trips on its own at the 20th); B and C have 2 successes each,
    // D 20 successes, as many as its minimum.
    calls(&a.breaker, 30, 30);
    assert_eq!(a.breaker.state(now()), BreakerState::Open);
    calls(&b.breaker, 2, 0);
    calls(&c.breaker, 2, 0);
    calls(&d.breaker, 20, 0);
    let open = |m: &BreakerMember| m.breaker.state(now()) == BreakerState::Open;
    assert!(poll(400, || open(&b) && open(&c)), "b and c did not open");
    for m in [&b, &c] {
        let s = pay(m);
        assert_eq!(s.opened_on_evidence, 1);
        assert_eq!(m.breaker.stats().closed_to_open, 1);
        // A publishes the 20 failures that opened it; D its 20 successes.
        assert!(s.fleet_calls >= 40 && s.fleet_failures == 20, "{s:?}");
        assert!(s.fleet_members >= 2, "{s:?}");
        let ev = m.fleet.events();
        assert!(
            ev.iter().any(|e| matches!(
                e,
                FleetEvent::BreakerOpenedOnFleetEvidence { name, fleet_failures: 20, members, .. }
                    if name == "pay" && *members >= 2
            )),
            "{ev:?}"
        );
        // Opened the way a local trip opens: refused for the open duration.
        assert!(m.breaker.try_acquire(now()).is_err());
    }
    // D has enough calls of its own, all successes: it stays closed, sync after sync.
    more_syncs(&d, 5);
    assert_eq!(d.breaker.state(now()), BreakerState::Closed);
    assert_eq!(pay(&d).opened_on_evidence, 0);
    assert_eq!(pay(&d).calls, 20);
    // A opened on its own: the agent did not count it.
    assert_eq!(pay(&a).opened_on_evidence, 0);
    assert_eq!(a.breaker.stats().closed_to_open, 1);
    // B and C, opened on evidence, publish nothing while open (no echo).
    assert_eq!((pay(&b).calls, pay(&c).calls), (0, 0));
}

#[test]
fn one_member_alone_never_opens_anyone() {
    let r = Redis::start(&[]);
    let url = r.url();
    // A fleet of one: its own failures, too few to judge, never open it on evidence.
    let solo = breaker_member(&url, "solo", "x");
    calls(&solo.breaker, 2, 2);
    more_syncs(&solo, 5);
    assert_eq!(solo.fleet.stats().members, 1);
    assert_eq!(solo.breaker.state(now()), BreakerState::Closed);
    // Two members: one failing plenty, one with no calls. The evidence comes from one
    // member only, so the other stays closed.
    let x = breaker_member(&url, "pair", "x");
    let y = breaker_member(&url, "pair", "y");
    calls(&x.breaker, 30, 30);
    assert!(poll(400, || pay(&y).fleet_calls >= 20), "{:?}", pay(&y));
    more_syncs(&y, 5);
    let s = pay(&y);
    assert_eq!((s.fleet_members, s.opened_on_evidence), (1, 0), "{s:?}");
    assert_eq!(y.breaker.state(now()), BreakerState::Closed);
    assert!(y
        .fleet
        .events()
        .iter()
        .all(|e| !matches!(e, FleetEvent::BreakerOpenedOnFleetEvidence { .. })));
}

#[test]
fn hostile_breaker_counts_open_nothing() {
    let r = Redis::start(&[]);
    let url = r.url();
    let b = breaker_member(&url, "hostile-brk", "b");
    calls(&b.breaker, 2, 0);
    let mut con = r.con();
    let key = |m: &str| format!("guards:fleet:{{hostile-brk}}:m:{m}");
    let max = u64::MAX.to_string();
    let rows: [(&str, &[(&str, &str)]); 4] = [
        ("evil", &[("c:pay", &max), ("f:pay", &max), ("w", "7")]),
        (
            "garbage",
            &[("c:pay", "lots"), ("f:pay", "-3"), ("h:pay", "x")],
        ),
        ("inverted", &[("c:pay", "0"), ("f:pay", "1000")]),
        (
            "overflow",
            &[("c:pay", "99999999999999999999999"), ("f:pay", "5")],
        ),
    ];
    for (m, fields) in rows {
        let _: () = redis::cmd("HSET")
            .arg(key(m))
            .arg(
                fields
                    .iter()
                    .flat_map(|(k, v)| [*k, *v])
                    .collect::<Vec<_>>(),
            )
            .query(&mut con)
            .unwrap();
        let _: () = redis::cmd("SADD")
            .arg("guards:fleet:{hostile-brk}:members")
            .arg(m)
            .query(&mut con)
            .unwrap();
    }
    assert!(poll(400, || b.fleet.stats().members == 5));
    more_syncs(&b, 5);
    let s = pay(&b);
    // Only "evil" counts, clamped: one member, however loud, opens nothing.
    assert_eq!(s.fleet_members, 1, "{s:?}");
    assert_eq!(s.fleet_calls, MAX_WINDOW_CALLS + 2, "{s:?}");
    assert_eq!(s.fleet_failures, MAX_WINDOW_CALLS, "{s:?}");
    assert_eq!(s.opened_on_evidence, 0);
    assert_eq!(b.breaker.state(now()), BreakerState::Closed);
    assert!(b.fleet.stats().connected);
}

#[test]
fn a_breaker_name_attaches_once() {
    let r = Redis::start(&[]);
    let m = breaker_member(&r.url(), "dup-brk", "a");
    assert_eq!(
        m.fleet.attach_breaker("pay", breaker()),
        Err(FleetError::Duplicate("pay".into()))
    );
    assert!(matches!(
        m.fleet.attach_breaker("bad name", breaker()),
        Err(FleetError::Config("breaker name", _))
    ));
    // An allowance of the same name is another namespace.
    let bh = Arc::new(Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap());
    assert!(m.fleet.attach_bulkhead("pay", 4, bh).is_ok());
}
