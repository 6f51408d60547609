//! A guarded call on a fleet-attached bulkhead beside the same guard unattached, in one run
//! (goal: attached / unattached <= 1.05: the hot path is unchanged), then the agent's cost
//! at the default sync interval: its CPU time and the Redis commands a second per member.
//!
//! Starts its own `redis-server` on a free loopback port (`make redis-server` installs it)
//! and kills it at the end. Run: `cargo bench -p guards-ffi --bench fleet`.

use std::hint::black_box;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use guards::fleet::{Fleet, FleetConfig};
use guards_core::{Bulkhead, BulkheadConfig};

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn commands(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn estimate(group: &str, id: &str) -> Option<f64> {
    let dir = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_owned());
    let p = format!("{dir}/criterion/{group}/{id}/new/estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}

fn main() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server not found: run `make redis-server`");
    for _ in 0..400 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let url = format!("redis://127.0.0.1:{port}");

    let plain = Bulkhead::new(BulkheadConfig {
        max_concurrent: 1024,
    })
    .unwrap();
    let attached = Arc::new(Bulkhead::new(BulkheadConfig { max_concurrent: 1 }).unwrap());
    let fleet = Fleet::join(FleetConfig::new(&url, "bench", "m1")).unwrap();
    fleet
        .attach_bulkhead("stock", 1024, Arc::clone(&attached))
        .unwrap();
    for _ in 0..400 {
        if attached.max_concurrent() == 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(attached.max_concurrent(), 1024);

    let mut c = Criterion::default().configure_from_args();
    {
        let mut g = c.benchmark_group("fleet");
        g.bench_function("bulkhead_unattached", |b| {
            b.iter(|| {
                let p = black_box(&plain).try_acquire().unwrap();
                plain.release(p);
            })
        });
        g.bench_function("bulkhead_fleet_attached", |b| {
            b.iter(|| {
                let p = black_box(&*attached).try_acquire().unwrap();
                attached.release(p);
            })
        });
        g.finish();
    }
    c.final_summary();
    if let (Some(u), Some(a)) = (
        estimate("fleet", "bulkhead_unattached"),
        estimate("fleet", "bulkhead_fleet_attached"),
    ) {
        println!(
            "fleet: unattached {u:.2} ns, attached {a:.2} ns, ratio {:.3}",
            a / u
        );
    }

    // The agent's cost at the default interval, the process otherwise idle.
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let secs = 10;
    let (cpu0, cmd0, t0) = (cpu_time(), commands(&mut con), Instant::now());
    std::thread::sleep(Duration::from_secs(secs));
    let (cpu1, cmd1, el) = (cpu_time(), commands(&mut con), t0.elapsed());
    let cmds = cmd1 - cmd0 - 1; // our own second INFO
    println!(
        "fleet agent at {:?}: {:.3}% of one core, {:.1} Redis commands/s per member ({} in {:.1} s)",
        fleet.config().sync_interval,
        100.0 * (cpu1 - cpu0).as_secs_f64() / el.as_secs_f64(),
        cmds as f64 / el.as_secs_f64(),
        cmds,
        el.as_secs_f64()
    );
    drop(fleet);
    let _ = server.kill();
    let _ = server.wait();
}
