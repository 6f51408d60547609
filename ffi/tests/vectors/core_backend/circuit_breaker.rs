//! `circuit_breaker.json`: a `CircuitBreaker<128>` (the `capacity` the interpreter asks
//! for), or with `keyed_slots` a `KeyedBreakers<4>` whose steps carry `key`.

use guards::schema;
use guards::vectors::{config, Args, Record, Reply};
use guards_core::circuit_breaker::{key_of, CircuitBreaker, CircuitBreakerPermit, KeyedBreakers};
use serde_json::json as j;

use super::{done, json, now, unknown, Case, Held, OrReply, Res};

enum Target {
    One(Box<CircuitBreaker<128>>),
    Keyed(Box<KeyedBreakers<4>>),
}

struct Breaker {
    target: Target,
    permits: Held<CircuitBreakerPermit>,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::CIRCUIT_BREAKER, args, "config").r()?;
    let cells = args.u64("capacity").r()?;
    if cells != 128 {
        return Err(Reply::Unsupported(format!("{cells} cells (only 128 here)")));
    }
    let target = match args.opt_u64("keyed_slots").r()? {
        None => Target::One(Box::new(CircuitBreaker::new(c).r()?)),
        Some(4) => Target::Keyed(Box::new(KeyedBreakers::new(c).r()?)),
        Some(n) => return Err(Reply::Unsupported(format!("{n} keyed slots (only 4 here)"))),
    };
    Ok(Box::new(Breaker {
        target,
        permits: Held::default(),
    }))
}

impl Breaker {
    fn breaker(&self, a: &Args) -> Res<&CircuitBreaker<128>> {
        match &self.target {
            Target::One(b) => Ok(b),
            Target::Keyed(set) => {
                let key = a.u64("key").r()?;
                set.get_or_insert(key)
                    .map_err(|e| Reply::Failed(format!("key {key}: {e}")))
            }
        }
    }

    fn keyed(&self, op: &str) -> Res<&KeyedBreakers<4>> {
        match &self.target {
            Target::Keyed(set) => Ok(set),
            Target::One(_) => Err(Reply::Failed(format!("`{op}` outside a keyed case"))),
        }
    }
}

impl Case for Breaker {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        match op {
            "try_acquire" => {
                let b = self.breaker(a)?;
                match b.try_acquire(now(a)?) {
                    Ok(p) => {
                        let v = match p.probe_timeout() {
                            Some(t) => j!({"admitted": "probe", "generation": p.generation(),
                                           "probe_timeout": t.0}),
                            None => j!({"admitted": "call", "generation": p.generation()}),
                        };
                        // An admitted call the file does not name is dropped unreported.
                        self.permits.keep(a, p, drop)?;
                        json(v)
                    }
                    Err(r) => json(j!({"rejected": r.reason.name(), "retry_at": r.retry_at.0})),
                }
            }
            "on_success" | "on_failure" => {
                let p = self.permits.take(a)?;
                let b = self.breaker(a)?;
                let e = if op == "on_success" {
                    b.on_success(p, now(a)?)
                } else {
                    b.on_failure(p, now(a)?)
                };
                Ok(Record::scalar(e.name()))
            }
            "on_ignore" => {
                let p = self.permits.take(a)?;
                self.breaker(a)?.on_ignore(p);
                done()
            }
            "state" => Ok(Record::scalar(self.breaker(a)?.state(now(a)?).name())),
            "status" => {
                let s = self.breaker(a)?.status();
                json(j!({
                    "state": s.state.name(),
                    "generation": s.generation,
                    "probes_issued": s.probes_issued,
                    "probes_passed": s.probes_passed,
                    "consecutive_opens": s.consecutive_opens,
                    "half_open_at": s.half_open_at.0,
                }))
            }
            "window_counts" => {
                let w = self.breaker(a)?.window_counts(now(a)?);
                json(j!({"calls": w.calls, "failures": w.failures, "slow": w.slow}))
            }
            "stats" => {
                let s = self.breaker(a)?.stats();
                json(j!({
                    "successes": s.successes,
                    "failures": s.failures,
                    "slow_calls": s.slow_calls,
                    "probes_admitted": s.probes_admitted,
                    "probe_successes": s.probe_successes,
                    "probe_failures": s.probe_failures,
                    "ignored": s.ignored,
                    "discarded": s.discarded,
                    "rejected_open": s.rejected_open,
                    "rejected_half_open": s.rejected_half_open,
                    "closed_to_open": s.closed_to_open,
                    "open_to_half_open": s.open_to_half_open,
                    "half_open_to_closed": s.half_open_to_closed,
                    "half_open_to_open": s.half_open_to_open,
                }))
            }
            "get_or_insert" => {
                let set = self.keyed(op)?;
                let r = set.get_or_insert(a.u64("key").r()?);
                Ok(Record::scalar(if r.is_ok() { "ok" } else { "full" }))
            }
            "len" => Ok(Record::scalar(self.keyed(op)?.len())),
            "key_of" => Ok(Record::scalar(key_of(a.str("bytes").r()?.as_bytes()))),
            other => unknown(other),
        }
    }
}
