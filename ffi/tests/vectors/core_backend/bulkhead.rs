//! `bulkhead.json`: one `Bulkhead`; permits held by handle.

use guards::schema;
use guards::vectors::{config, Args, Record};
use guards_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit};
use serde_json::json as j;

use super::{done, json, nanos, unknown, Case, Held, OrReply, Res};

struct Cap {
    bulkhead: Bulkhead,
    permits: Held<BulkheadPermit>,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::BULKHEAD, args, "config").r()?;
    Ok(Box::new(Cap {
        bulkhead: Bulkhead::new(c).r()?,
        permits: Held::default(),
    }))
}

impl Case for Cap {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let b = &self.bulkhead;
        match op {
            "try_acquire" => match b.try_acquire() {
                Ok(p) => {
                    self.permits.keep(a, p, |p| b.release(p))?;
                    json(j!({"acquired": true}))
                }
                Err(full) => json(j!({
                    "acquired": false,
                    "in_flight": full.in_flight,
                    "max_concurrent": full.max_concurrent,
                })),
            },
            "release" => {
                b.release(self.permits.take(a)?);
                done()
            }
            "in_flight" => Ok(Record::scalar(b.in_flight())),
            "available" => Ok(Record::scalar(b.available())),
            "stats" => {
                let s = b.stats();
                json(j!({"acquired": s.acquired, "rejected": s.rejected,
                         "released": s.released, "in_flight": s.in_flight}))
            }
            "from_littles_law" => match BulkheadConfig::from_littles_law(
                a.f64("rate_per_sec").r()?,
                nanos(a, "p99")?,
                a.f64("headroom").r()?,
            ) {
                Ok(c) => json(j!({"max_concurrent": c.max_concurrent})),
                Err(e) => json(j!({"error": {"field": e.field(), "kind": e.kind().name()}})),
            },
            other => unknown(other),
        }
    }
}
