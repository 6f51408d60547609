//! `backoff.json`: a `Backoff` and the case's generator (SplitMix64 seeded with `seed`).

use guards::schema;
use guards::vectors::{config, Args, Record};
use guards_core::backoff::{fnv1a64, next_stable_run, stable_offset, Backoff};
use guards_core::{Nanos, Rng};

use super::{nanos, now, unknown, Case, OrReply, Res};

struct Seeded {
    backoff: Backoff,
    rng: Rng,
}

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    let c = config::build_under(&schema::BACKOFF, args, "config").r()?;
    Ok(Box::new(Seeded {
        backoff: Backoff::new(c).r()?,
        rng: Rng::new(args.u64("seed").r()?),
    }))
}

fn retry(a: &Args) -> Res<u32> {
    let r = a.u64("retry").r()?;
    u32::try_from(r).map_err(|_| guards::vectors::Reply::Failed(format!("retry {r} > u32")))
}

impl Case for Seeded {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let b = &self.backoff;
        let ns = |n: Nanos| Ok(Record::scalar(n.0));
        match op {
            "ceiling" => ns(b.ceiling(retry(a)?)),
            "max_delay" => ns(b.max_delay(retry(a)?)),
            "delay" => ns(b.delay(retry(a)?, nanos(a, "prev")?, &self.rng)),
            "delay_from_bits" => {
                ns(b.delay_from_bits(retry(a)?, nanos(a, "prev")?, a.u64("bits").r()?))
            }
            "rng_next_u64" => Ok(Record::scalar(self.rng.next_u64())),
            "fnv1a64" => Ok(Record::scalar(fnv1a64(a.str("id").r()?.as_bytes()))),
            "stable_offset" => ns(stable_offset(
                a.str("id").r()?.as_bytes(),
                nanos(a, "period")?,
            )),
            "next_stable_run" => ns(next_stable_run(
                a.str("id").r()?.as_bytes(),
                nanos(a, "period")?,
                now(a)?,
            )),
            other => unknown(other),
        }
    }
}
