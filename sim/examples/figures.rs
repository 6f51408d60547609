//! Print the Basketly figures (docs/basketly.md) next to the simulated values for seeds 1
//! and 2, and the simulated values of the side rows that have no figure.
//!
//! ```text
//! cargo run -p guards-sim --release --example figures
//! ```

use std::collections::HashMap;

use guards_sim::basketly::basketly;
use guards_sim::topology::clock;
use guards_sim::SimResult;

struct Runs(HashMap<String, SimResult>);

impl Runs {
    fn get(&mut self, setting: &str, seed: u64, until: Option<&str>) -> Option<&SimResult> {
        let key = format!("{setting}/{seed}/{until:?}");
        if !self.0.contains_key(&key) {
            match basketly(setting, seed, until, &[] as &[&str]) {
                Ok(r) => {
                    self.0.insert(key.clone(), r);
                }
                Err(e) => {
                    eprintln!("{setting}: {e}");
                    return None;
                }
            }
        }
        self.0.get(&key)
    }
}

fn hiccup(r: &SimResult, col: &str) -> f64 {
    r.mean(col, "20:00:02", "20:00:20").unwrap_or(f64::NAN)
}

fn gauge(r: &SimResult, col: &str, at: &str) -> f64 {
    let i = clock::parse(at).and_then(|t| r.index_of(t)).unwrap_or(0);
    r.column(col)
        .and_then(|c| c.get(i.saturating_sub(1)).copied())
        .unwrap_or(f64::NAN)
}

fn rec(r: &SimResult) -> String {
    r.summary_value("recovered_at")
        .and_then(|v| v.as_str())
        .unwrap_or("never")
        .to_string()
}

fn lat(r: &SimResult, q: &str) -> f64 {
    r.summary_value(&format!("stock_latency_ms.{q}"))
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
}

fn sumv(r: &SimResult, key: &str) -> f64 {
    r.summary_value(key)
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
}

type Probe = Box<dyn Fn(&mut Runs, u64) -> String>;

fn row(name: &str, seed_says: &str, f: Probe, runs: &mut Runs) {
    let a = f(runs, 1);
    let b = f(runs, 2);
    println!("| {name} | {seed_says} | {a} | {b} |");
}

fn num(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

macro_rules! probe {
    ($runs:ident, $seed:ident, $body:expr) => {
        Box::new(move |$runs: &mut Runs, $seed: u64| -> String { $body })
    };
}

fn main() {
    let mut runs = Runs(HashMap::new());
    let r = &mut runs;
    println!("| figure | value | seed 1 | seed 2 |");
    println!("|---|---|---|---|");
    row(
        "W1 threads busy (avg 19:59:46-54)",
        "≈ 26",
        probe!(r, s, {
            r.get("C0", s, None).map_or("-".into(), |x| {
                num(x
                    .mean("shopapi_busy", "19:59:46", "19:59:54")
                    .unwrap_or(f64::NAN))
            })
        }),
        r,
    );
    row(
        "W1 threads busy at 19:59:55",
        "28",
        probe!(r, s, {
            r.get("C0", s, None).map_or("-".into(), |x| {
                num(gauge(x, "svc.shop-api.busy_now", "19:59:55"))
            })
        }),
        r,
    );
    for (q, want) in [
        ("p50", "3.0"),
        ("p95", "12.2"),
        ("p99", "18.7"),
        ("p999", "≈ 30 (60 ms ≈ 2 × P99.9)"),
        ("mean", "4.2"),
    ] {
        row(
            &format!("healthy stock call {q} (ms)"),
            want,
            probe!(r, s, {
                r.get("healthy", s, None)
                    .map_or("-".into(), |x| num(lat(x, q)))
            }),
            r,
        );
    }
    row(
        "healthy: share of stock calls > 5 ms",
        "30.7 % / 30.5 %",
        probe!(r, s, {
            r.get("healthy", s, None).map_or("-".into(), |x| {
                format!("{:.1} %", 100.0 * sumv(x, "stock_over_5ms"))
            })
        }),
        r,
    );
    row(
        "healthy stock calls per instance",
        "315/s",
        probe!(r, s, {
            r.get("healthy", s, None).map_or("-".into(), |x| {
                num(x
                    .mean("stock_calls", "20:00:01", "20:00:59")
                    .unwrap_or(f64::NAN)
                    / 4.0)
            })
        }),
        r,
    );
    let c0 = Some("20:02:01");
    row(
        "C0 goodput 20:00:02 onward",
        "0",
        probe!(r, s, {
            r.get("C0", s, c0).map_or("-".into(), |x| {
                num(x.sum("goodput", "20:00:02", "20:02:01").unwrap_or(f64::NAN))
            })
        }),
        r,
    );
    row(
        "C0 stale DB work in hiccup",
        "≈ 200/s",
        probe!(r, s, {
            r.get("C0", s, c0)
                .map_or("-".into(), |x| num(hiccup(x, "db_stale")))
        }),
        r,
    );
    row(
        "C0 stale DB work after (20:00:22-30)",
        "≈ 2,000/s",
        probe!(r, s, {
            r.get("C0", s, c0).map_or("-".into(), |x| {
                num(x
                    .mean("db_stale", "20:00:22", "20:00:30")
                    .unwrap_or(f64::NAN))
            })
        }),
        r,
    );
    row(
        "C0 app attempts (20:00:06-30)",
        "≈ 6,180/s",
        probe!(r, s, {
            r.get("C0", s, c0).map_or("-".into(), |x| {
                num(x
                    .mean("app_attempts", "20:00:06", "20:00:30")
                    .unwrap_or(f64::NAN))
            })
        }),
        r,
    );
    row(
        "C0 waiting for a connection",
        "≈ 120",
        probe!(r, s, {
            r.get("C0", s, c0)
                .map_or("-".into(), |x| num(gauge(x, "conn_wait", "20:00:10")))
        }),
        r,
    );
    row(
        "C0 connection wait mean / max (ms)",
        "≈ 600 / < 800",
        probe!(r, s, {
            r.get("C0", s, c0).map_or("-".into(), |x| {
                let max = x
                    .column("svc.db.wait_max_ms")
                    .map_or(f64::NAN, |c| c.iter().cloned().fold(0.0, f64::max));
                format!("{} / {}", num(hiccup(x, "svc.db.wait_mean_ms")), num(max))
            })
        }),
        r,
    );
    row(
        "C0 inside stock at 20:00:15",
        "3,100-3,200",
        probe!(r, s, {
            r.get("C0", s, c0)
                .map_or("-".into(), |x| num(gauge(x, "inside_stock", "20:00:15")))
        }),
        r,
    );
    row(
        "C0 queued in shop-api at 20:02:00",
        "≈ 403,000",
        probe!(r, s, {
            r.get("C0", s, c0)
                .map_or("-".into(), |x| num(gauge(x, "shopapi_queue", "20:02:00")))
        }),
        r,
    );
    row(
        "11y C0 duplicate commits / checkouts twice (hiccup)",
        "[held back]",
        probe!(r, s, {
            r.get("C0", s, c0).map_or("-".into(), |x| {
                format!(
                    "{} / {}",
                    num(hiccup(x, "duplicate_commits")),
                    num(hiccup(x, "duplicate_checkouts"))
                )
            })
        }),
        r,
    );
    row(
        "C1 recovered at",
        "20:00:20",
        probe!(r, s, r.get("C1", s, None).map_or("-".into(), rec)),
        r,
    );
    for (setting, want) in [
        ("C1", "5.4×"),
        ("C2", "1.9×"),
        ("C3", "1.9×"),
        ("C4", "≈ 1.1× (≈ 1,380/s)"),
    ] {
        row(
            &format!("{setting} calls to stock ÷ 1,260"),
            want,
            probe!(r, s, {
                r.get(setting, s, None).map_or("-".into(), |x| {
                    format!(
                        "{:.2}× ({:.0}/s)",
                        hiccup(x, "stock_calls") / 1260.0,
                        hiccup(x, "stock_calls")
                    )
                })
            }),
            r,
        );
    }
    row(
        "10z-cancel recovered at",
        "20:00:20",
        probe!(r, s, {
            r.get("10z-cancel", s, None).map_or("-".into(), rec)
        }),
        r,
    );
    row(
        "10z stale / done DB work in hiccup; recovered",
        "[held back]",
        probe!(r, s, {
            r.get("10z", s, None).map_or("-".into(), |x| {
                format!(
                    "{} / {}; {}",
                    num(hiccup(x, "db_stale")),
                    num(hiccup(x, "db_done")),
                    rec(x)
                )
            })
        }),
        r,
    );
    row(
        "jitter fixed: retries in the 20:00:21.000 slot",
        "1,200",
        probe!(r, s, {
            r.get("jitter-fixed", s, None).map_or("-".into(), |x| {
                num(x.at("retries", "20:00:21.000").unwrap_or(f64::NAN))
            })
        }),
        r,
    );
    row(
        "jitter full: min / max per 10 ms slot",
        "≈ 12 (seed 1: 5..25)",
        probe!(r, s, {
            r.get("jitter-full", s, None).map_or("-".into(), |x| {
                let i = clock::parse("20:00:20")
                    .and_then(|t| x.index_of(t))
                    .unwrap_or(0);
                let c = x.column("retries").unwrap_or(&[]);
                let sl = &c[i..(i + 100).min(c.len())];
                format!(
                    "{} / {}",
                    num(sl.iter().cloned().fold(f64::MAX, f64::min)),
                    num(sl.iter().cloned().fold(0.0, f64::max))
                )
            })
        }),
        r,
    );
    row(
        "C4 checkouts",
        "≈ 9/s",
        probe!(r, s, {
            r.get("C4", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "goodput_checkout")))
        }),
        r,
    );
    row(
        "C5 checkouts",
        "≈ 44/s",
        probe!(r, s, {
            r.get("C5", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "goodput_checkout")))
        }),
        r,
    );
    row(
        "C5 cart views with badges",
        "≈ 157/s",
        probe!(r, s, {
            r.get("C5", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "goodput_cart")))
        }),
        r,
    );
    row(
        "C5 cart views failed",
        "> 1,000/s",
        probe!(r, s, {
            r.get("C5", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "entry.cart.failed")))
        }),
        r,
    );
    row(
        "C5 calls to stock",
        "≈ 1,400/s",
        probe!(r, s, {
            r.get("C5", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "stock_calls")))
        }),
        r,
    );
    row(
        "17x refusals at the door (+ age drops)",
        "≈ 7,300/s",
        probe!(r, s, {
            r.get("17x", s, None).map_or("-".into(), |x| {
                format!(
                    "{} (+{})",
                    num(hiccup(x, "svc.stock.refused")),
                    num(hiccup(x, "svc.db.dropped_age"))
                )
            })
        }),
        r,
    );
    row(
        "C6 calls to stock; cut vs C5",
        "≈ 80/s; 95 %",
        probe!(r, s, {
            let c5 = r
                .get("C5", s, None)
                .map_or(f64::NAN, |x| hiccup(x, "stock_calls"));
            r.get("C6", s, None).map_or("-".into(), |x| {
                format!(
                    "{}; {:.1} %",
                    num(hiccup(x, "stock_calls")),
                    100.0 * (1.0 - hiccup(x, "stock_calls") / c5)
                )
            })
        }),
        r,
    );
    row(
        "C6 flap seconds (stock-call spikes)",
        "every 5 s",
        probe!(r, s, {
            r.get("C6", s, None).map_or("-".into(), |x| {
                let c = x.column("stock_calls").unwrap_or(&[]);
                let a = clock::parse("20:00:01")
                    .and_then(|t| x.index_of(t))
                    .unwrap_or(0);
                let b = clock::parse("20:00:20")
                    .and_then(|t| x.index_of(t))
                    .unwrap_or(0);
                let mut v: Vec<f64> = c[a..b].to_vec();
                v.sort_by(f64::total_cmp);
                let med = v.get(v.len() / 2).copied().unwrap_or(0.0);
                (a..b)
                    .filter(|&i| c[i] > 1.5 * med)
                    .map(|i| x.clock_labels()[i][6..].to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
        }),
        r,
    );
    row(
        "15t calls to stock in hiccup",
        "[held back]",
        probe!(r, s, {
            r.get("15t", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "stock_calls")))
        }),
        r,
    );
    row(
        "C7 cart views failing fast",
        "≈ 1,190/s",
        probe!(r, s, {
            r.get("C7", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "entry.cart.failed")))
        }),
        r,
    );
    row(
        "A-C7 recovered at; calls in flight",
        "20:00:21; 2-4",
        probe!(r, s, {
            r.get("A-C7", s, None).map_or("-".into(), |x| {
                format!(
                    "{}; {}",
                    rec(x),
                    num(x
                        .mean("svc.stock.inside_avg", "20:00:11", "20:00:20")
                        .unwrap_or(f64::NAN))
                )
            })
        }),
        r,
    );
    row(
        "A-C0 goodput after 20:00:02; inside stock at 20:00:15",
        "0; [held back]",
        probe!(r, s, {
            r.get("A-C0", s, None).map_or("-".into(), |x| {
                format!(
                    "{}; {}",
                    num(x.sum("goodput", "20:00:02", "20:00:30").unwrap_or(f64::NAN)),
                    num(gauge(x, "inside_stock", "20:00:15"))
                )
            })
        }),
        r,
    );
    row(
        "C8 degraded cart views",
        "≈ 1,190/s",
        probe!(r, s, {
            r.get("C8", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "degraded_cart")))
        }),
        r,
    );
    row(
        "C8 full goodput in hiccup",
        "≈ 850/s",
        probe!(r, s, {
            r.get("C8", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "goodput")))
        }),
        r,
    );
    row(
        "C8 checkouts",
        "44-50/s (over seeds)",
        probe!(r, s, {
            r.get("C8", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "goodput_checkout")))
        }),
        r,
    );
    row(
        "C8 product pages (hiccup)",
        "whole (≈ 800/s)",
        probe!(r, s, {
            r.get("C8", s, None)
                .map_or("-".into(), |x| num(hiccup(x, "goodput_product")))
        }),
        r,
    );
    row(
        "C8 recovered at",
        "20:00:21",
        probe!(r, s, r.get("C8", s, None).map_or("-".into(), rec)),
        r,
    );
    row(
        "C8 reserve attempts timed out",
        "22 % / 23 %",
        probe!(r, s, {
            r.get("C8", s, None).map_or("-".into(), |x| {
                format!(
                    "{:.1} %",
                    100.0
                        * x.sum("reserve_timeouts", "20:00:02", "20:00:20")
                            .unwrap_or(f64::NAN)
                        / x.sum("reserve_attempts", "20:00:02", "20:00:20")
                            .unwrap_or(f64::NAN)
                )
            })
        }),
        r,
    );
    println!();
    println!("| side row | value | seed 1 | seed 2 |");
    println!("|---|---|---|---|");
    row(
        "13a (C4, 8 instances): calls ÷ 1,260; checkouts",
        "",
        probe!(r, s, {
            r.get("13a", s, None).map_or("-".into(), |x| {
                format!(
                    "{:.2}×; {}",
                    hiccup(x, "stock_calls") / 1260.0,
                    num(hiccup(x, "goodput_checkout"))
                )
            })
        }),
        r,
    );
    row(
        "17y: queue at 20:00:20; recovered at",
        "",
        probe!(r, s, {
            r.get("17y", s, None).map_or("-".into(), |x| {
                format!("{}; {}", num(gauge(x, "shopapi_queue", "20:00:20")), rec(x))
            })
        }),
        r,
    );
    for setting in ["H-none", "H-retry", "H-hedge"] {
        row(
            &format!("{setting}: P99 / P99.9 (ms); extra load"),
            "",
            probe!(r, s, {
                r.get(setting, s, None).map_or("-".into(), |x| {
                    format!(
                        "{} / {}; {:.1} %",
                        num(lat(x, "p99")),
                        num(lat(x, "p999")),
                        100.0 * (sumv(x, "stock_calls_per_first_attempt") - 1.0)
                    )
                })
            }),
            r,
        );
    }
    for setting in ["P-sync", "P-offset"] {
        row(
            &format!("{setting}: max / min reads served per s (20:01:00-20:02:00)"),
            "",
            probe!(r, s, {
                r.get(setting, s, None).map_or("-".into(), |x| {
                    let a = clock::parse("20:01:00")
                        .and_then(|t| x.index_of(t))
                        .unwrap_or(0);
                    let c = x.column("reads_served").unwrap_or(&[]);
                    let sl = &c[a..(a + 60).min(c.len())];
                    format!(
                        "{} / {}",
                        num(sl.iter().cloned().fold(0.0, f64::max)),
                        num(sl.iter().cloned().fold(f64::MAX, f64::min))
                    )
                })
            }),
            r,
        );
    }
    for setting in ["cap40", "cap60"] {
        row(
            &format!("{setting}: goodput in hiccup; recovered at"),
            "",
            probe!(r, s, {
                r.get(setting, s, None).map_or("-".into(), |x| {
                    format!("{}; {}", num(hiccup(x, "goodput")), rec(x))
                })
            }),
            r,
        );
    }
    row(
        "C5-cap12: gate refusals; checkouts",
        "",
        probe!(r, s, {
            r.get("C5-cap12", s, None).map_or("-".into(), |x| {
                format!(
                    "{}; {}",
                    num(hiccup(x, "bulkhead_rejections")),
                    num(hiccup(x, "goodput_checkout"))
                )
            })
        }),
        r,
    );
    for setting in [
        "bvb-budget",
        "bvb-breaker",
        "bvb-breaker-no503",
        "C8",
        "bvb-bulkhead",
    ] {
        row(
            &format!("{setting}: checkouts (seeds 1-5 mean); badges; calls; recovered"),
            "",
            probe!(r, s, {
                let mean5 = (1..=5)
                    .map(|k| {
                        r.get(setting, k, None)
                            .map_or(f64::NAN, |x| hiccup(x, "goodput_checkout"))
                    })
                    .sum::<f64>()
                    / 5.0;
                r.get(setting, s, None).map_or("-".into(), |x| {
                    format!(
                        "{} ({}); {}; {}; {}",
                        num(hiccup(x, "goodput_checkout")),
                        num(mean5),
                        num(hiccup(x, "goodput_cart")),
                        num(hiccup(x, "stock_calls")),
                        rec(x)
                    )
                })
            }),
            r,
        );
    }
    for setting in ["AZ", "AZ-halved"] {
        row(
            &format!("{setting}: checkouts; degraded carts; recovered"),
            "",
            probe!(r, s, {
                r.get(setting, s, None).map_or("-".into(), |x| {
                    format!(
                        "{}; {}; {}",
                        num(hiccup(x, "goodput_checkout")),
                        num(hiccup(x, "degraded_cart")),
                        rec(x)
                    )
                })
            }),
            r,
        );
    }
    for setting in ["ops-shed", "ops-flush"] {
        row(
            &format!("{setting}: goodput 20:03:00-20:04:00; recovered at"),
            "",
            probe!(r, s, {
                r.get(setting, s, None).map_or("-".into(), |x| {
                    format!(
                        "{}; {}",
                        num(x
                            .mean("goodput", "20:03:00", "20:04:00")
                            .unwrap_or(f64::NAN)),
                        rec(x)
                    )
                })
            }),
            r,
        );
    }
}
