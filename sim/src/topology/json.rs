//! A [`Topology`] as JSON, so that any system can be described from Python (or a file) as
//! plain data: `Topology::from_json(text)` and `Topology::to_json()`.
//!
//! Conventions:
//! - durations are strings with a unit (`"250ns"`, `"40us"`, `"4ms"`, `"2s"`, `"1.5s"`)
//!   or numbers of seconds; instants are clock times (`"20:00:07.032"`) or numbers of
//!   seconds since midnight;
//! - services, operations and edges may be referred to by name or by index;
//! - every field with a natural default may be left out (a service defaults to one
//!   instance with one server, FIFO and no guards; an edge policy to one attempt with no
//!   timeout, see [`CallPolicy::default`]).
//!
//! Errors name the path of the offending value, e.g. `edges[3].policy.timeout`.
//!
//! # Examples
//! ```
//! use guards_sim::{Sim, Topology};
//! let text = r#"{
//!   "start": "12:00:00",
//!   "services": [
//!     {"name": "client", "client": true, "ops": [{"name": "go", "steps": [{"call": "c->s"}]}]},
//!     {"name": "server", "servers": 2,
//!      "ops": [{"name": "work", "steps": [{"work": {"exp": "5ms"}}]}]}
//!   ],
//!   "edges": [{"name": "c->s", "from": "client", "to": "server", "op": "work",
//!              "policy": {"attempts": 2, "timeout": "50ms"}}],
//!   "entries": [{"name": "go", "service": "client", "op": "go",
//!                "arrivals": {"poisson": 100}}]
//! }"#;
//! let topo = Topology::from_json(text).unwrap();
//! assert_eq!(Topology::from_json(&topo.to_json()).unwrap(), topo);
//! let until = topo.start.saturating_add(guards_core::Nanos::from_secs(3));
//! let r = Sim::new(topo, 1).unwrap().run(until);
//! assert!(r.column("entry.go.offered").unwrap()[0] > 50.0);
//! ```

use guards_core::{Nanos, Priority};
use serde_json::{json, Map, Value};

use super::*;
use crate::error::SimError;

type R<T> = Result<T, SimError>;

fn err(path: &str, expected: &str, got: &Value) -> SimError {
    SimError::BadValue {
        key: path.to_string(),
        value: got.to_string(),
        expected: expected.to_string(),
    }
}

/// A cursor over an object, reporting paths.
struct Obj<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn new(path: &str, v: &'a Value) -> R<Self> {
        match v {
            Value::Object(map) => Ok(Obj {
                path: path.to_string(),
                map,
            }),
            _ => Err(err(path, "an object", v)),
        }
    }

    fn at(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn check_keys(&self, allowed: &[&str]) -> R<()> {
        for k in self.map.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(SimError::UnknownKey { key: self.at(k) });
            }
        }
        Ok(())
    }

    fn bool(&self, key: &str, default: bool) -> R<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(err(&self.at(key), "true or false", v)),
        }
    }

    fn u32(&self, key: &str, default: u32) -> R<u32> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(|| err(&self.at(key), "a non-negative integer", v)),
        }
    }

    fn f64(&self, key: &str, default: f64) -> R<f64> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| err(&self.at(key), "a finite number", v)),
        }
    }

    fn str(&self, key: &str) -> R<&'a str> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(err(&self.at(key), "a string", v)),
            None => Err(err(&self.at(key), "a string", &Value::Null)),
        }
    }

    fn dur(&self, key: &str, default: Nanos) -> R<Nanos> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => duration(&self.at(key), v),
        }
    }

    fn opt_dur(&self, key: &str) -> R<Option<Nanos>> {
        self.get(key)
            .map(|v| duration(&self.at(key), v))
            .transpose()
    }

    fn instant(&self, key: &str) -> R<Nanos> {
        let v = self.get(key).unwrap_or(&Value::Null);
        instant(&self.at(key), v)
    }

    fn list(&self, key: &str) -> R<&'a [Value]> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(err(&self.at(key), "a list", v)),
        }
    }
}

fn duration(path: &str, v: &Value) -> R<Nanos> {
    let bad = || {
        err(
            path,
            "a duration: \"4ms\", \"2s\", \"250us\", \"10ns\" or seconds",
            v,
        )
    };
    match v {
        Value::Number(n) => n.as_f64().and_then(Nanos::from_secs_f64).ok_or_else(bad),
        Value::String(s) => {
            let s = s.trim();
            let (num, scale) = if let Some(x) = s.strip_suffix("ns") {
                (x, 1e-9)
            } else if let Some(x) = s.strip_suffix("us") {
                (x, 1e-6)
            } else if let Some(x) = s.strip_suffix("µs") {
                (x, 1e-6)
            } else if let Some(x) = s.strip_suffix("ms") {
                (x, 1e-3)
            } else if let Some(x) = s.strip_suffix('s') {
                (x, 1.0)
            } else {
                return Err(bad());
            };
            let x: f64 = num.trim().parse().map_err(|_| bad())?;
            Nanos::from_secs_f64(x * scale).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn instant(path: &str, v: &Value) -> R<Nanos> {
    let bad = || {
        err(
            path,
            "a clock time \"HH:MM:SS[.fff]\" or seconds since midnight",
            v,
        )
    };
    match v {
        Value::String(s) => clock::parse(s).ok_or_else(bad),
        Value::Number(n) => n.as_f64().and_then(Nanos::from_secs_f64).ok_or_else(bad),
        _ => Err(bad()),
    }
}

fn priority(path: &str, v: &Value) -> R<Priority> {
    v.as_u64()
        .and_then(|x| u8::try_from(x).ok())
        .and_then(Priority::new)
        .ok_or_else(|| err(path, "a priority level 0..=7 (0 most important)", v))
}

/// A reference by name or index into `names`.
fn reference(path: &str, v: &Value, names: &[String]) -> R<usize> {
    match v {
        Value::String(s) => names
            .iter()
            .position(|n| n == s)
            .ok_or_else(|| err(path, &format!("one of {names:?}"), v)),
        Value::Number(n) => n
            .as_u64()
            .map(|i| i as usize)
            .filter(|i| *i < names.len())
            .ok_or_else(|| err(path, &format!("an index below {}", names.len()), v)),
        _ => Err(err(path, "a name or an index", v)),
    }
}

fn dur_text(d: Nanos) -> Value {
    let n = d.as_u64();
    if n % 1_000_000_000 == 0 {
        Value::String(format!("{}s", n / 1_000_000_000))
    } else if n % 1_000_000 == 0 {
        Value::String(format!("{}ms", n / 1_000_000))
    } else if n % 1_000 == 0 {
        Value::String(format!("{}us", n / 1_000))
    } else {
        Value::String(format!("{n}ns"))
    }
}

fn instant_text(t: Nanos) -> Value {
    if t.as_u64() % 1_000_000 == 0 {
        Value::String(clock::format_millis(t))
    } else {
        json!(t.as_secs_f64())
    }
}

fn dist_from(path: &str, v: &Value) -> R<Dist> {
    let o = Obj::new(path, v)?;
    o.check_keys(&["const", "exp", "uniform", "bernoulli"])?;
    if let Some(d) = o.get("const") {
        return Ok(Dist::Const(duration(&o.at("const"), d)?));
    }
    if let Some(d) = o.get("exp") {
        return Ok(Dist::Exp(duration(&o.at("exp"), d)?));
    }
    if let Some(u) = o.get("uniform") {
        let p = o.at("uniform");
        return match u {
            Value::Array(a) if a.len() == 2 => Ok(Dist::Uniform(
                duration(&format!("{p}[0]"), &a[0])?,
                duration(&format!("{p}[1]"), &a[1])?,
            )),
            _ => Err(err(&p, "[lo, hi]", u)),
        };
    }
    if let Some(b) = o.get("bernoulli") {
        let b = Obj::new(&o.at("bernoulli"), b)?;
        b.check_keys(&["p", "value"])?;
        return Ok(Dist::Bernoulli {
            p: b.f64("p", 0.0)?,
            value: b.dur("value", Nanos::ZERO)?,
        });
    }
    Err(err(path, "one of const, exp, uniform, bernoulli", v))
}

fn dist_to(d: &Dist) -> Value {
    match *d {
        Dist::Const(x) => json!({ "const": dur_text(x) }),
        Dist::Exp(x) => json!({ "exp": dur_text(x) }),
        Dist::Uniform(a, b) => json!({ "uniform": [dur_text(a), dur_text(b)] }),
        Dist::Bernoulli { p, value } => json!({ "bernoulli": {"p": p, "value": dur_text(value)} }),
    }
}

impl Topology {
    /// Parse a topology from JSON (see the module docs). The result is checked again by
    /// [`crate::Sim::new`].
    pub fn from_json(text: &str) -> Result<Topology, SimError> {
        let v: Value = serde_json::from_str(text).map_err(|e| SimError::BadValue {
            key: "topology".into(),
            value: format!("line {} column {}", e.line(), e.column()),
            expected: format!("JSON ({e})"),
        })?;
        Topology::from_value(&v)
    }

    /// Build a topology from a parsed JSON value.
    pub fn from_value(v: &Value) -> Result<Topology, SimError> {
        let top = Obj::new("", v)?;
        top.check_keys(&[
            "start", "interval", "services", "edges", "entries", "events",
        ])?;
        let svc_values = top.list("services")?;
        let edge_values = top.list("edges")?;
        let svc_names: Vec<String> = svc_values
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Obj::new(&format!("services[{i}]"), s)
                    .and_then(|o| o.str("name"))
                    .map(str::to_string)
            })
            .collect::<R<_>>()?;
        let edge_names: Vec<String> = edge_values
            .iter()
            .enumerate()
            .map(|(i, e)| {
                Obj::new(&format!("edges[{i}]"), e)
                    .and_then(|o| o.str("name"))
                    .map(str::to_string)
            })
            .collect::<R<_>>()?;
        let mut op_names: Vec<Vec<String>> = Vec::new();
        for (i, s) in svc_values.iter().enumerate() {
            let o = Obj::new(&format!("services[{i}]"), s)?;
            let mut names = Vec::new();
            for (j, op) in o.list("ops")?.iter().enumerate() {
                names.push(
                    Obj::new(&format!("services[{i}].ops[{j}]"), op)?
                        .str("name")?
                        .to_string(),
                );
            }
            op_names.push(names);
        }

        let mut services = Vec::new();
        for (i, s) in svc_values.iter().enumerate() {
            services.push(service_from(&format!("services[{i}]"), s, &edge_names)?);
        }
        let mut edges = Vec::new();
        for (i, e) in edge_values.iter().enumerate() {
            edges.push(edge_from(&format!("edges[{i}]"), e, &svc_names, &op_names)?);
        }
        let mut entries = Vec::new();
        for (i, e) in top.list("entries")?.iter().enumerate() {
            entries.push(entry_from(
                &format!("entries[{i}]"),
                e,
                &svc_names,
                &op_names,
            )?);
        }
        let mut events = Vec::new();
        for (i, e) in top.list("events")?.iter().enumerate() {
            events.push(event_from(&format!("events[{i}]"), e, &svc_names)?);
        }
        Ok(Topology {
            start: match top.get("start") {
                Some(v) => instant("start", v)?,
                None => Nanos::ZERO,
            },
            interval: top.dur("interval", Nanos::from_secs(1))?,
            services,
            edges,
            entries,
            events,
        })
    }

    /// The topology as a JSON value (every field written out).
    pub fn to_value(&self) -> Value {
        let services: Vec<Value> = self.services.iter().map(|s| service_to(s, self)).collect();
        let edges: Vec<Value> = self.edges.iter().map(|e| edge_to(e, self)).collect();
        let entries: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                let arrivals = match e.arrivals {
                    Arrivals::Poisson { rate } => json!({ "poisson": rate }),
                    Arrivals::Burst { at, count } => {
                        json!({"burst": {"at": instant_text(at), "count": count}})
                    }
                    Arrivals::Periodic {
                        agents,
                        batch,
                        period,
                        offsets,
                    } => json!({"periodic": {
                        "agents": agents, "batch": batch, "period": dur_text(period),
                        "offsets": match offsets { Offsets::Aligned => "aligned", Offsets::Stable => "stable" }
                    }}),
                };
                json!({
                    "name": e.name,
                    "service": self.services.get(e.service).map_or(json!(e.service), |s| json!(s.name)),
                    "op": op_ref(self, e.service, e.op),
                    "priority": e.priority.level(),
                    "arrivals": arrivals,
                })
            })
            .collect();
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|ev| {
                let name = |s: usize| self.services.get(s).map_or(json!(s), |x| json!(x.name));
                match ev.action {
                    Action::Scale { service, instances } => json!({
                        "at": instant_text(ev.at),
                        "scale": {"service": name(service), "instances": instances}
                    }),
                    Action::Shed { service, max_queue } => json!({
                        "at": instant_text(ev.at),
                        "shed": {"service": name(service), "max_queue": max_queue}
                    }),
                    Action::Flush { service } => json!({
                        "at": instant_text(ev.at),
                        "flush": {"service": name(service)}
                    }),
                }
            })
            .collect();
        json!({
            "start": instant_text(self.start),
            "interval": dur_text(self.interval),
            "services": services,
            "edges": edges,
            "entries": entries,
            "events": events,
        })
    }

    /// The topology as JSON text.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

fn op_ref(t: &Topology, svc: usize, op: usize) -> Value {
    t.services
        .get(svc)
        .and_then(|s| s.ops.get(op))
        .map_or(json!(op), |o| json!(o.name))
}

fn service_from(path: &str, v: &Value, edge_names: &[String]) -> R<ServiceSpec> {
    let o = Obj::new(path, v)?;
    o.check_keys(&[
        "name",
        "instances",
        "servers",
        "client",
        "queue",
        "admission",
        "enforce_deadline",
        "slowdowns",
        "outages",
        "budgets",
        "bulkheads",
        "balance",
        "ops",
    ])?;
    let queue = match o.get("queue") {
        None => QueueSpec::default(),
        Some(q) => {
            let q = Obj::new(&o.at("queue"), q)?;
            q.check_keys(&["deadline_check", "discipline"])?;
            let discipline = match q.get("discipline") {
                None => None,
                Some(d) => {
                    let d = Obj::new(&q.at("discipline"), d)?;
                    d.check_keys(&["interval", "target", "codel", "lifo", "priority"])?;
                    Some(DisciplineSpec {
                        interval: d.dur("interval", Nanos::from_millis(100))?,
                        target: d.dur("target", Nanos::from_millis(5))?,
                        codel: d.bool("codel", true)?,
                        lifo: d.bool("lifo", true)?,
                        priority: d.bool("priority", true)?,
                    })
                }
            };
            QueueSpec {
                deadline_check: q.bool("deadline_check", false)?,
                discipline,
            }
        }
    };
    let admission = match o.get("admission") {
        None => None,
        Some(a) => {
            let a = Obj::new(&o.at("admission"), a)?;
            a.check_keys(&["limits"])?;
            let limits = a
                .list("limits")?
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_u64()
                        .and_then(|x| u32::try_from(x).ok())
                        .ok_or_else(|| err(&format!("{}[{i}]", a.at("limits")), "a limit", x))
                })
                .collect::<R<Vec<u32>>>()?;
            Some(AdmissionSpec { limits })
        }
    };
    let mut slowdowns = Vec::new();
    for (i, s) in o.list("slowdowns")?.iter().enumerate() {
        let s = Obj::new(&format!("{}[{i}]", o.at("slowdowns")), s)?;
        s.check_keys(&["start", "end", "factor"])?;
        slowdowns.push(Slowdown {
            start: s.instant("start")?,
            end: s.instant("end")?,
            factor: s.f64("factor", 1.0)?,
        });
    }
    let mut outages = Vec::new();
    for (i, s) in o.list("outages")?.iter().enumerate() {
        let s = Obj::new(&format!("{}[{i}]", o.at("outages")), s)?;
        s.check_keys(&["start", "end"])?;
        outages.push(Outage {
            start: s.instant("start")?,
            end: s.instant("end")?,
        });
    }
    let mut budgets = Vec::new();
    for (i, b) in o.list("budgets")?.iter().enumerate() {
        let b = Obj::new(&format!("{}[{i}]", o.at("budgets")), b)?;
        b.check_keys(&["capacity", "deposit"])?;
        budgets.push(BudgetSpec {
            capacity: b.f64("capacity", 10.0)?,
            deposit: b.f64("deposit", 0.1)?,
        });
    }
    let mut bulkheads = Vec::new();
    for (i, b) in o.list("bulkheads")?.iter().enumerate() {
        let b = Obj::new(&format!("{}[{i}]", o.at("bulkheads")), b)?;
        b.check_keys(&["max_concurrent"])?;
        bulkheads.push(BulkheadSpec {
            max_concurrent: b.u32("max_concurrent", 12)?,
        });
    }
    let balance = match o.get("balance") {
        None => Balance::Random,
        Some(Value::String(s)) if s == "random" => Balance::Random,
        Some(Value::String(s)) if s == "round_robin" => Balance::RoundRobin,
        Some(v) => return Err(err(&o.at("balance"), "\"random\" or \"round_robin\"", v)),
    };
    let mut ops = Vec::new();
    for (i, op) in o.list("ops")?.iter().enumerate() {
        let op = Obj::new(&format!("{}[{i}]", o.at("ops")), op)?;
        op.check_keys(&["name", "steps"])?;
        let mut steps = Vec::new();
        for (j, st) in op.list("steps")?.iter().enumerate() {
            let p = format!("{}[{j}]", op.at("steps"));
            let st = Obj::new(&p, st)?;
            st.check_keys(&["work", "commit", "call"])?;
            if let Some(e) = st.get("call") {
                steps.push(Step::Call(reference(&st.at("call"), e, edge_names)?));
            } else if let Some(w) = st.get("work") {
                steps.push(Step::Work(WorkSpec {
                    time: dist_from(&st.at("work"), w)?,
                    commit: st.bool("commit", false)?,
                }));
            } else {
                return Err(err(
                    &p,
                    "a step {\"work\": ...} or {\"call\": edge}",
                    &Value::Null,
                ));
            }
        }
        ops.push(OpSpec {
            name: op.str("name")?.to_string(),
            steps,
        });
    }
    Ok(ServiceSpec {
        name: o.str("name")?.to_string(),
        instances: o.u32("instances", 1)?,
        servers: o.u32("servers", 1)?,
        client: o.bool("client", false)?,
        queue,
        admission,
        enforce_deadline: o.bool("enforce_deadline", false)?,
        slowdowns,
        outages,
        budgets,
        bulkheads,
        balance,
        ops,
    })
}

fn service_to(s: &ServiceSpec, t: &Topology) -> Value {
    let ops: Vec<Value> = s
        .ops
        .iter()
        .map(|op| {
            let steps: Vec<Value> = op
                .steps
                .iter()
                .map(|st| match st {
                    Step::Work(w) => json!({"work": dist_to(&w.time), "commit": w.commit}),
                    Step::Call(e) => {
                        json!({"call": t.edges.get(*e).map_or(json!(e), |x| json!(x.name))})
                    }
                })
                .collect();
            json!({"name": op.name, "steps": steps})
        })
        .collect();
    json!({
        "name": s.name,
        "instances": s.instances,
        "servers": s.servers,
        "client": s.client,
        "queue": {
            "deadline_check": s.queue.deadline_check,
            "discipline": s.queue.discipline.map(|d| json!({
                "interval": dur_text(d.interval), "target": dur_text(d.target),
                "codel": d.codel, "lifo": d.lifo, "priority": d.priority
            })),
        },
        "admission": s.admission.as_ref().map(|a| json!({"limits": a.limits})),
        "enforce_deadline": s.enforce_deadline,
        "slowdowns": s.slowdowns.iter().map(|x| json!({
            "start": instant_text(x.start), "end": instant_text(x.end), "factor": x.factor
        })).collect::<Vec<_>>(),
        "outages": s.outages.iter().map(|x| json!({
            "start": instant_text(x.start), "end": instant_text(x.end)
        })).collect::<Vec<_>>(),
        "budgets": s.budgets.iter().map(|b| json!({"capacity": b.capacity, "deposit": b.deposit})).collect::<Vec<_>>(),
        "bulkheads": s.bulkheads.iter().map(|b| json!({"max_concurrent": b.max_concurrent})).collect::<Vec<_>>(),
        "balance": match s.balance { Balance::Random => "random", Balance::RoundRobin => "round_robin" },
        "ops": ops,
    })
}

fn edge_from(path: &str, v: &Value, svcs: &[String], ops: &[Vec<String>]) -> R<EdgeSpec> {
    let o = Obj::new(path, v)?;
    o.check_keys(&[
        "name",
        "from",
        "to",
        "op",
        "priority",
        "optional",
        "record_latency",
        "policy",
    ])?;
    let from = reference(&o.at("from"), o.get("from").unwrap_or(&Value::Null), svcs)?;
    let to = reference(&o.at("to"), o.get("to").unwrap_or(&Value::Null), svcs)?;
    let op = reference(
        &o.at("op"),
        o.get("op").unwrap_or(&json!(0)),
        ops.get(to).map_or(&[][..], |v| v.as_slice()),
    )?;
    let policy = match o.get("policy") {
        None => CallPolicy::default(),
        Some(p) => policy_from(&o.at("policy"), p)?,
    };
    Ok(EdgeSpec {
        name: o.str("name")?.to_string(),
        from,
        to,
        op,
        priority: o
            .get("priority")
            .map(|p| priority(&o.at("priority"), p))
            .transpose()?,
        optional: o.bool("optional", false)?,
        record_latency: o.bool("record_latency", false)?,
        policy,
    })
}

fn policy_from(path: &str, v: &Value) -> R<CallPolicy> {
    let o = Obj::new(path, v)?;
    o.check_keys(&[
        "attempts",
        "timeout",
        "backoff",
        "retry_on_timeout",
        "retry_on_error",
        "retry_on_overloaded",
        "deadline",
        "margin",
        "cancel",
        "idempotency",
        "give_up_as_overloaded",
        "budget",
        "breaker",
        "bulkhead",
        "hedge",
    ])?;
    let d = CallPolicy::default();
    let backoff = match o.get("backoff") {
        None => d.backoff,
        Some(b) => {
            let b = Obj::new(&o.at("backoff"), b)?;
            b.check_keys(&["jitter", "base", "cap"])?;
            let jitter = match b.get("jitter") {
                None => JitterKind::Full,
                Some(Value::String(s)) => match s.as_str() {
                    "none" => JitterKind::None,
                    "full" => JitterKind::Full,
                    "equal" => JitterKind::Equal,
                    "decorrelated" => JitterKind::Decorrelated,
                    _ => {
                        return Err(err(
                            &b.at("jitter"),
                            "none | full | equal | decorrelated",
                            &json!(s),
                        ))
                    }
                },
                Some(v) => return Err(err(&b.at("jitter"), "a string", v)),
            };
            let base = b.dur("base", Nanos::ZERO)?;
            BackoffSpec {
                jitter,
                base,
                cap: b.dur("cap", base)?,
            }
        }
    };
    let deadline = match o.get("deadline") {
        None => DeadlineMode::None,
        Some(Value::String(s)) => match s.as_str() {
            "none" => DeadlineMode::None,
            "attempt" => DeadlineMode::Attempt,
            "whole" => DeadlineMode::WholeLeft,
            _ => return Err(err(&o.at("deadline"), "none | attempt | whole", &json!(s))),
        },
        Some(v) => return Err(err(&o.at("deadline"), "a string", v)),
    };
    let idempotency = match o.get("idempotency") {
        None => Idempotency::Idempotent,
        Some(Value::String(s)) => match s.as_str() {
            "idempotent" => Idempotency::Idempotent,
            "keyed" => Idempotency::Keyed,
            "unkeyed" => Idempotency::Unkeyed,
            _ => {
                return Err(err(
                    &o.at("idempotency"),
                    "idempotent | keyed | unkeyed",
                    &json!(s),
                ))
            }
        },
        Some(v) => return Err(err(&o.at("idempotency"), "a string", v)),
    };
    let index = |key: &str| -> R<Option<usize>> {
        o.get(key)
            .map(|x| {
                x.as_u64()
                    .map(|i| i as usize)
                    .ok_or_else(|| err(&o.at(key), "an index into the caller's list", x))
            })
            .transpose()
    };
    let breaker = match o.get("breaker") {
        None => None,
        Some(b) => {
            let b = Obj::new(&o.at("breaker"), b)?;
            b.check_keys(&[
                "window",
                "time_window",
                "failure_rate",
                "min_calls",
                "open_for",
                "probes",
                "probe_timeout",
                "count_overloaded",
            ])?;
            let window = match b.get("time_window") {
                Some(t) => BreakerWindow::Time(duration(&b.at("time_window"), t)?),
                None => BreakerWindow::Count(b.u32("window", 20)?),
            };
            Some(BreakerSpec {
                window,
                failure_rate: b.f64("failure_rate", 0.5)?,
                min_calls: b.u32("min_calls", 0)?,
                open_for: b.dur("open_for", Nanos::from_secs(5))?,
                probes: b.u32("probes", 3)?,
                probe_timeout: b.dur("probe_timeout", Nanos::from_millis(100))?,
                count_overloaded: b.bool("count_overloaded", true)?,
            })
        }
    };
    let hedge = match o.get("hedge") {
        None => None,
        Some(h) => {
            let h = Obj::new(&o.at("hedge"), h)?;
            h.check_keys(&["percentile", "min_delay", "max_hedges"])?;
            Some(HedgeSpec {
                percentile: h.f64("percentile", 0.95)?,
                min_delay: h.dur("min_delay", Nanos::from_millis(1))?,
                max_hedges: h.u32("max_hedges", 1)?,
            })
        }
    };
    Ok(CallPolicy {
        attempts: o.u32("attempts", d.attempts)?,
        timeout: o.opt_dur("timeout")?,
        backoff,
        retry_on_timeout: o.bool("retry_on_timeout", d.retry_on_timeout)?,
        retry_on_error: o.bool("retry_on_error", d.retry_on_error)?,
        retry_on_overloaded: o.bool("retry_on_overloaded", d.retry_on_overloaded)?,
        deadline,
        margin: o.dur("margin", Nanos::ZERO)?,
        cancel: o.bool("cancel", d.cancel)?,
        idempotency,
        give_up_as_overloaded: o.bool("give_up_as_overloaded", d.give_up_as_overloaded)?,
        budget: index("budget")?,
        breaker,
        bulkhead: index("bulkhead")?,
        hedge,
    })
}

fn edge_to(e: &EdgeSpec, t: &Topology) -> Value {
    let p = &e.policy;
    let name = |s: usize| t.services.get(s).map_or(json!(s), |x| json!(x.name));
    json!({
        "name": e.name,
        "from": name(e.from),
        "to": name(e.to),
        "op": op_ref(t, e.to, e.op),
        "priority": e.priority.map(|p| p.level()),
        "optional": e.optional,
        "record_latency": e.record_latency,
        "policy": {
            "attempts": p.attempts,
            "timeout": p.timeout.map(dur_text),
            "backoff": {
                "jitter": match p.backoff.jitter {
                    JitterKind::None => "none", JitterKind::Full => "full",
                    JitterKind::Equal => "equal", JitterKind::Decorrelated => "decorrelated",
                },
                "base": dur_text(p.backoff.base),
                "cap": dur_text(p.backoff.cap),
            },
            "retry_on_timeout": p.retry_on_timeout,
            "retry_on_error": p.retry_on_error,
            "retry_on_overloaded": p.retry_on_overloaded,
            "deadline": match p.deadline {
                DeadlineMode::None => "none", DeadlineMode::Attempt => "attempt",
                DeadlineMode::WholeLeft => "whole",
            },
            "margin": dur_text(p.margin),
            "cancel": p.cancel,
            "idempotency": match p.idempotency {
                Idempotency::Idempotent => "idempotent", Idempotency::Keyed => "keyed",
                Idempotency::Unkeyed => "unkeyed",
            },
            "give_up_as_overloaded": p.give_up_as_overloaded,
            "budget": p.budget,
            "breaker": p.breaker.map(|b| {
                let mut m = json!({
                    "failure_rate": b.failure_rate, "min_calls": b.min_calls,
                    "open_for": dur_text(b.open_for), "probes": b.probes,
                    "probe_timeout": dur_text(b.probe_timeout),
                    "count_overloaded": b.count_overloaded,
                });
                match b.window {
                    BreakerWindow::Count(n) => m["window"] = json!(n),
                    BreakerWindow::Time(d) => m["time_window"] = dur_text(d),
                }
                m
            }),
            "bulkhead": p.bulkhead,
            "hedge": p.hedge.map(|h| json!({
                "percentile": h.percentile, "min_delay": dur_text(h.min_delay),
                "max_hedges": h.max_hedges
            })),
        },
    })
}

fn entry_from(path: &str, v: &Value, svcs: &[String], ops: &[Vec<String>]) -> R<EntrySpec> {
    let o = Obj::new(path, v)?;
    o.check_keys(&["name", "service", "op", "priority", "arrivals"])?;
    let service = reference(
        &o.at("service"),
        o.get("service").unwrap_or(&Value::Null),
        svcs,
    )?;
    let op = reference(
        &o.at("op"),
        o.get("op").unwrap_or(&json!(0)),
        ops.get(service).map_or(&[][..], |v| v.as_slice()),
    )?;
    let a = Obj::new(&o.at("arrivals"), o.get("arrivals").unwrap_or(&Value::Null))?;
    a.check_keys(&["poisson", "burst", "periodic"])?;
    let arrivals = if a.get("poisson").is_some() {
        Arrivals::Poisson {
            rate: a.f64("poisson", 0.0)?,
        }
    } else if let Some(b) = a.get("burst") {
        let b = Obj::new(&a.at("burst"), b)?;
        b.check_keys(&["at", "count"])?;
        Arrivals::Burst {
            at: b.instant("at")?,
            count: b.u32("count", 0)?,
        }
    } else if let Some(p) = a.get("periodic") {
        let p = Obj::new(&a.at("periodic"), p)?;
        p.check_keys(&["agents", "batch", "period", "offsets"])?;
        let offsets = match p.get("offsets") {
            None => Offsets::Stable,
            Some(Value::String(s)) if s == "aligned" => Offsets::Aligned,
            Some(Value::String(s)) if s == "stable" => Offsets::Stable,
            Some(v) => return Err(err(&p.at("offsets"), "aligned | stable", v)),
        };
        Arrivals::Periodic {
            agents: p.u32("agents", 1)?,
            batch: p.u32("batch", 1)?,
            period: p.dur("period", Nanos::from_secs(60))?,
            offsets,
        }
    } else {
        return Err(err(
            &a.path,
            "one of poisson, burst, periodic",
            &Value::Null,
        ));
    };
    Ok(EntrySpec {
        name: o.str("name")?.to_string(),
        service,
        op,
        priority: match o.get("priority") {
            None => Priority::CRITICAL,
            Some(p) => priority(&o.at("priority"), p)?,
        },
        arrivals,
    })
}

fn event_from(path: &str, v: &Value, svcs: &[String]) -> R<TimedEvent> {
    let o = Obj::new(path, v)?;
    o.check_keys(&["at", "scale", "shed", "flush"])?;
    let at = o.instant("at")?;
    let svc = |a: &Obj<'_>| {
        reference(
            &a.at("service"),
            a.get("service").unwrap_or(&Value::Null),
            svcs,
        )
    };
    let action = if let Some(s) = o.get("scale") {
        let s = Obj::new(&o.at("scale"), s)?;
        s.check_keys(&["service", "instances"])?;
        Action::Scale {
            service: svc(&s)?,
            instances: s.u32("instances", 1)?,
        }
    } else if let Some(s) = o.get("shed") {
        let s = Obj::new(&o.at("shed"), s)?;
        s.check_keys(&["service", "max_queue"])?;
        Action::Shed {
            service: svc(&s)?,
            max_queue: s.u32("max_queue", 0)?,
        }
    } else if let Some(s) = o.get("flush") {
        let s = Obj::new(&o.at("flush"), s)?;
        s.check_keys(&["service"])?;
        Action::Flush { service: svc(&s)? }
    } else {
        return Err(err(path, "one of scale, shed, flush", v));
    };
    Ok(TimedEvent { at, action })
}
