//! `brownout.json`: one `Brownout`, or (a config with `operations`) a `BrownoutTable<16>`.

use guards::schema;
use guards::vectors::{config, Args, Record, Reply};
use guards_core::brownout::{
    operation_key, Brownout, BrownoutStats, BrownoutTable, RefusalKind, RegisterError,
};
use serde_json::json as j;

use super::{done, json, unknown, Case, OrReply, Res};

pub fn build(args: &Args) -> Res<Box<dyn Case>> {
    if args.has("capacity") {
        let cap = args.u64("capacity").r()?;
        if cap != 16 {
            return Err(Reply::Unsupported(format!(
                "a table of {cap} (only 16 here)"
            )));
        }
        let mut t: BrownoutTable<16> = BrownoutTable::new();
        for (key, c) in config::brownout_operations(args).r()? {
            t.register(key, c)
                .map_err(|e| Reply::Failed(format!("registering {key}: {e}")))?;
        }
        return Ok(Box::new(Table(t)));
    }
    let c = config::build_under(&schema::BROWNOUT, args, "config").r()?;
    Ok(Box::new(Single(Brownout::new(c).r()?)))
}

fn kind(a: &Args) -> Res<RefusalKind> {
    let n = a.str("kind").r()?;
    RefusalKind::from_name(n).ok_or_else(|| Reply::Failed(format!("unknown kind `{n}`")))
}

fn stats(s: BrownoutStats) -> serde_json::Value {
    j!({"full": s.full, "degraded": s.degraded, "errors": s.errors, "proceeded": s.proceeded})
}

struct Single(Brownout);

impl Case for Single {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let b = &self.0;
        match op {
            "on_refusal" => Ok(Record::scalar(b.on_refusal(kind(a)?).name())),
            "decide" => Ok(Record::scalar(b.config().decide(kind(a)?).name())),
            "on_full" => {
                b.on_full();
                done()
            }
            "stats" => json(stats(b.stats())),
            "operation_key" => Ok(Record::scalar(operation_key(a.str("name").r()?))),
            other => unknown(other),
        }
    }
}

struct Table(BrownoutTable<16>);

impl Case for Table {
    fn run(&mut self, op: &str, a: &Args) -> Res<Record> {
        let t = &mut self.0;
        let key = || a.u64("key").r();
        match op {
            "on_refusal" => Ok(Record::scalar(t.on_refusal(key()?, kind(a)?).name())),
            "on_full" => Ok(Record::scalar(t.on_full(key()?))),
            "stats" => match t.get(key()?) {
                Some(b) => json(stats(b.stats())),
                None => Ok(Record::null()),
            },
            "totals" => json(stats(t.totals())),
            "unknown" => Ok(Record::scalar(t.unknown())),
            "register" => {
                let c = match config::build_under(&schema::BROWNOUT, a, "config") {
                    Ok(c) => c,
                    Err(f) => {
                        return match Reply::from_failure(&f) {
                            Reply::ConfigError { field, kind } => {
                                json(j!({"error": "config", "field": field, "kind": kind}))
                            }
                            other => Err(other),
                        }
                    }
                };
                match t.register(key()?, c) {
                    Ok(index) => Ok(Record::scalar(index)),
                    Err(RegisterError::Duplicate) => json(j!({"error": "duplicate"})),
                    Err(RegisterError::Full) => json(j!({"error": "full"})),
                    Err(RegisterError::Config(e)) => {
                        json(j!({"error": "config", "field": e.field(), "kind": e.kind().name()}))
                    }
                    Err(other) => Err(Reply::Failed(format!("unexpected {other}"))),
                }
            }
            other => unknown(other),
        }
    }
}
