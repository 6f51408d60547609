//! A [`Topology`] as JSON, so that any system can be described from Python (or a file) as
//! plain data: `Topology::from_json(text)` and `Topology::to_json()`, read and written by
//! serde's derive.
//!
//! Conventions:
//! - durations are strings with a unit (`"250ns"`, `"40us"`, `"40ms"`, `"2s"`, `"1.5s"`)
//!   or numbers of seconds; instants are clock times (`"20:00:07.032"`) or numbers of
//!   seconds since midnight ([`super::units`]);
//! - the guards are guards-core's own configs with the Python API's field names, units,
//!   defaults and validation ([`super::configs`]): a service's `admission`, `queue.discipline`,
//!   `budgets`, `bulkheads` and `limiters`; an edge policy's `retry`, `breaker` and `hedge`;
//! - services, operations and edges may be referred to by name or by index;
//! - every field with a natural default may be left out (a service defaults to one
//!   instance with one server, FIFO and no guards; an edge policy to one attempt with no
//!   timeout, see [`CallPolicy::default`]).
//!
//! Errors name the path of the offending value, down to the field of a guard's config:
//! `edges[3].policy.breaker.window_size: ...`.
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
//!              "policy": {"attempt_timeout": "50ms",
//!                         "retry": {"max_attempts": 2, "backoff": {"base": "10ms"}},
//!                         "breaker": {"window_size": 20, "open_duration": "2s"}}}],
//!   "entries": [{"name": "go", "service": "client", "op": "go",
//!                "arrivals": {"poisson": 100}}]
//! }"#;
//! let topo = Topology::from_json(text).unwrap();
//! assert_eq!(topo.edges[0].policy.breaker.unwrap().window_size, 20);
//! assert_eq!(Topology::from_json(&topo.to_json()).unwrap(), topo);
//! let until = topo.start.saturating_add(guards_core::Nanos::from_secs(3));
//! let r = Sim::new(topo, 1).unwrap().run(until);
//! assert!(r.column("entry.go.offered").unwrap()[0] > 50.0);
//!
//! let bad = text.replace("\"window_size\": 20", "\"window_size\": 0");
//! let e = Topology::from_json(&bad).unwrap_err();
//! assert!(e.to_string().starts_with("edges[0].policy.breaker.window_size: "), "{e}");
//! ```

use guards_core::admission::AdmissionConfig;
use guards_core::bulkhead::BulkheadConfig;
use guards_core::limiter::LimiterConfig;
use guards_core::retry_budget::RetryBudgetConfig;
use guards_core::{Nanos, Priority};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::configs::{self, FIELD_MARK};
use super::units;
use super::*;
use crate::error::SimError;

/// A reference by name or by index.
#[derive(Debug, Clone, PartialEq)]
enum Ref {
    Index(usize),
    Name(String),
}

impl<'de> Deserialize<'de> for Ref {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Ref;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a name or an index")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Ref, E> {
                usize::try_from(v)
                    .map(Ref::Index)
                    .map_err(|_| E::custom("index too large"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Ref, E> {
                Ok(Ref::Name(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Ref {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ref::Index(i) => s.serialize_u64(*i as u64),
            Ref::Name(n) => s.serialize_str(n),
        }
    }
}

/// A priority level, 0 (most important) to 7.
mod priority {
    use super::*;

    pub fn serialize<S: Serializer>(p: &Priority, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(p.level())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Priority, D::Error> {
        let v = u64::deserialize(d)?;
        u8::try_from(v).ok().and_then(Priority::new).ok_or_else(|| {
            de::Error::custom(format!(
                "{v} is not a priority level 0..=7 (0 most important)"
            ))
        })
    }

    pub mod opt {
        use super::*;

        pub fn serialize<S: Serializer>(p: &Option<Priority>, s: S) -> Result<S::Ok, S::Error> {
            match p {
                Some(p) => s.serialize_u8(p.level()),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Priority>, D::Error> {
            #[derive(Deserialize)]
            struct P(#[serde(with = "super")] Priority);
            Ok(Option::<P>::deserialize(d)?.map(|p| p.0))
        }
    }
}

fn one() -> u32 {
    1
}

fn one_second() -> Nanos {
    Nanos::from_secs(1)
}

fn sixty_seconds() -> Nanos {
    Nanos::from_secs(60)
}

fn critical() -> Priority {
    Priority::CRITICAL
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireTopology {
    #[serde(default, with = "units::instant")]
    start: Nanos,
    #[serde(default = "one_second", with = "units::duration")]
    interval: Nanos,
    #[serde(default)]
    services: Vec<WireService>,
    #[serde(default)]
    edges: Vec<WireEdge>,
    #[serde(default)]
    entries: Vec<WireEntry>,
    #[serde(default)]
    events: Vec<WireEvent>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireService {
    name: String,
    #[serde(default = "one")]
    instances: u32,
    #[serde(default = "one")]
    servers: u32,
    #[serde(default)]
    client: bool,
    #[serde(default)]
    queue: QueueSpec,
    #[serde(default, with = "configs::opt")]
    admission: Option<AdmissionConfig>,
    #[serde(default)]
    enforce_deadline: bool,
    #[serde(default)]
    slowdowns: Vec<Slowdown>,
    #[serde(default)]
    outages: Vec<Outage>,
    #[serde(default, with = "configs::budgets")]
    budgets: Vec<RetryBudgetConfig>,
    #[serde(default, with = "configs::list")]
    bulkheads: Vec<BulkheadConfig>,
    #[serde(default, with = "configs::list")]
    limiters: Vec<LimiterConfig>,
    #[serde(default)]
    balance: Balance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fleet: Option<FleetSpec>,
    #[serde(default)]
    ops: Vec<WireOp>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireOp {
    name: String,
    #[serde(default)]
    steps: Vec<WireStep>,
}

/// `{"work": dist, "commit": bool}` or `{"call": edge}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work: Option<Dist>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<Ref>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEdge {
    name: String,
    from: Ref,
    to: Ref,
    #[serde(default)]
    op: Option<Ref>,
    #[serde(default, with = "priority::opt")]
    priority: Option<Priority>,
    #[serde(default)]
    optional: bool,
    #[serde(default)]
    record_latency: bool,
    #[serde(default)]
    policy: CallPolicy,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEntry {
    name: String,
    service: Ref,
    #[serde(default)]
    op: Option<Ref>,
    #[serde(default = "critical", with = "priority")]
    priority: Priority,
    arrivals: WireArrivals,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum WireArrivals {
    Poisson(f64),
    Burst {
        #[serde(with = "units::instant")]
        at: Nanos,
        #[serde(default)]
        count: u32,
    },
    Periodic {
        #[serde(default = "one")]
        agents: u32,
        #[serde(default = "one")]
        batch: u32,
        #[serde(default = "sixty_seconds", with = "units::duration")]
        period: Nanos,
        #[serde(default)]
        offsets: Offsets,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEvent {
    #[serde(with = "units::instant")]
    at: Nanos,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scale: Option<WireScale>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shed: Option<WireShed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flush: Option<WireFlush>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireScale {
    service: Ref,
    #[serde(default = "one")]
    instances: u32,
    #[serde(default, skip_serializing_if = "is_zero", with = "units::duration")]
    lb_delay: Nanos,
}

fn is_zero(d: &Nanos) -> bool {
    d.is_zero()
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireShed {
    service: Ref,
    #[serde(default)]
    max_queue: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireFlush {
    service: Ref,
}

fn bad(path: &str, value: String, expected: impl Into<String>) -> SimError {
    SimError::BadValue {
        key: path.to_string(),
        value,
        expected: expected.into(),
    }
}

/// Resolve a reference into `names` (the path names the reference).
fn resolve(path: &str, r: &Ref, names: &[&str], what: &str) -> Result<usize, SimError> {
    match r {
        Ref::Index(i) if *i < names.len() => Ok(*i),
        Ref::Index(i) => Err(bad(
            path,
            i.to_string(),
            format!("a {what} index below {}", names.len()),
        )),
        Ref::Name(n) => names.iter().position(|x| x == n).ok_or_else(|| {
            bad(
                path,
                format!("{n:?}"),
                format!("the name of a {what}: one of {names:?}"),
            )
        }),
    }
}

/// Refuse two items of a list with the same name.
fn unique(list: &str, names: &[&str]) -> Result<(), SimError> {
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(bad(
                &format!("{list}[{i}].name"),
                format!("{n:?}"),
                "a name not used before in the list",
            ));
        }
    }
    Ok(())
}

/// The value at `path` inside `root`, as JSON text.
fn value_at(root: &Value, path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut v = root;
    for seg in path.iter() {
        v = match seg {
            Segment::Seq { index } => v.get(*index)?,
            Segment::Map { key } => v.get(key.as_str())?,
            Segment::Enum { variant } => v.get(variant.as_str())?,
            Segment::Unknown => return None,
        };
    }
    Some(v.to_string())
}

/// A serde error as a [`SimError`] naming the path of the bad value.
fn error_at(root: &Value, e: serde_path_to_error::Error<serde_json::Error>) -> SimError {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let msg = e.inner().to_string();
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}.{b}"),
    };
    // A guard config's own error names its field inside the config.
    if let Some(rest) = msg.strip_prefix(FIELD_MARK) {
        let (unknown, rest) = match rest.strip_prefix('U') {
            Some(r) => (true, r),
            None => (false, rest.strip_prefix('B').unwrap_or(rest)),
        };
        if let Some((field, message)) = rest.split_once(FIELD_MARK) {
            let message = message.split(" at line ").next().unwrap_or(message);
            let full = join(&path, field);
            if unknown {
                return SimError::UnknownKey { key: full };
            }
            let value = root
                .pointer(&pointer(&full))
                .map_or_else(|| "?".to_string(), Value::to_string);
            return SimError::BadValue {
                key: full,
                value,
                expected: message.to_string(),
            };
        }
    }
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        // The path already ends with the unknown field (serde_path_to_error records it).
        let ends = path == field || path.ends_with(&format!(".{field}"));
        return SimError::UnknownKey {
            key: if ends { path } else { join(&path, field) },
        };
    }
    SimError::BadValue {
        key: if path.is_empty() {
            "topology".into()
        } else {
            path
        },
        value: value_at(root, e.path()).unwrap_or_else(|| "?".into()),
        expected: msg,
    }
}

/// A JSON pointer for a path like `edges[3].policy.breaker.limits[2]`.
fn pointer(path: &str) -> String {
    let mut out = String::new();
    for part in path.split('.') {
        let mut rest = part;
        let head = rest.split('[').next().unwrap_or("");
        if !head.is_empty() {
            out.push('/');
            out.push_str(&head.replace('~', "~0").replace('/', "~1"));
        }
        rest = &rest[head.len()..];
        while let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']').unwrap_or(r.len());
            out.push('/');
            out.push_str(&r[..close]);
            rest = r.get(close + 1..).unwrap_or("");
        }
    }
    out
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
        let w: WireTopology = serde_path_to_error::deserialize(v).map_err(|e| error_at(v, e))?;
        let svc_names: Vec<&str> = w.services.iter().map(|s| s.name.as_str()).collect();
        let edge_names: Vec<&str> = w.edges.iter().map(|e| e.name.as_str()).collect();
        unique("services", &svc_names)?;
        unique("edges", &edge_names)?;
        let op_names: Vec<Vec<&str>> = w
            .services
            .iter()
            .map(|s| s.ops.iter().map(|o| o.name.as_str()).collect())
            .collect();
        for (i, ops) in op_names.iter().enumerate() {
            unique(&format!("services[{i}].ops"), ops)?;
        }
        let ops_of = |svc: usize| op_names.get(svc).map_or(&[][..], Vec::as_slice);
        let op_ref = |path: &str, svc: usize, r: &Option<Ref>| -> Result<usize, SimError> {
            resolve(
                path,
                r.as_ref().unwrap_or(&Ref::Index(0)),
                ops_of(svc),
                "operation",
            )
        };

        let mut services = Vec::with_capacity(w.services.len());
        for (i, s) in w.services.iter().enumerate() {
            let mut ops = Vec::with_capacity(s.ops.len());
            for (j, op) in s.ops.iter().enumerate() {
                let mut steps = Vec::with_capacity(op.steps.len());
                for (k, st) in op.steps.iter().enumerate() {
                    let path = format!("services[{i}].ops[{j}].steps[{k}]");
                    steps.push(match (&st.work, &st.call) {
                        (Some(d), None) => Step::Work(WorkSpec {
                            time: *d,
                            commit: st.commit.unwrap_or(false),
                        }),
                        (None, Some(r)) if st.commit.is_none() => {
                            Step::Call(resolve(&format!("{path}.call"), r, &edge_names, "edge")?)
                        }
                        _ => {
                            return Err(bad(
                                &path,
                                "?".into(),
                                "a step {\"work\": ..., \"commit\": ...} or {\"call\": edge}",
                            ))
                        }
                    });
                }
                ops.push(OpSpec {
                    name: op.name.clone(),
                    steps,
                });
            }
            services.push(ServiceSpec {
                name: s.name.clone(),
                instances: s.instances,
                servers: s.servers,
                client: s.client,
                queue: s.queue,
                admission: s.admission,
                enforce_deadline: s.enforce_deadline,
                slowdowns: s.slowdowns.clone(),
                outages: s.outages.clone(),
                budgets: s.budgets.clone(),
                bulkheads: s.bulkheads.clone(),
                limiters: s.limiters.clone(),
                balance: s.balance,
                fleet: s.fleet.clone(),
                ops,
            });
        }
        let mut edges = Vec::with_capacity(w.edges.len());
        for (i, e) in w.edges.iter().enumerate() {
            let p = format!("edges[{i}]");
            let from = resolve(&format!("{p}.from"), &e.from, &svc_names, "service")?;
            let to = resolve(&format!("{p}.to"), &e.to, &svc_names, "service")?;
            edges.push(EdgeSpec {
                name: e.name.clone(),
                from,
                to,
                op: op_ref(&format!("{p}.op"), to, &e.op)?,
                priority: e.priority,
                optional: e.optional,
                record_latency: e.record_latency,
                policy: e.policy,
            });
        }
        let mut entries = Vec::with_capacity(w.entries.len());
        for (i, e) in w.entries.iter().enumerate() {
            let p = format!("entries[{i}]");
            let service = resolve(&format!("{p}.service"), &e.service, &svc_names, "service")?;
            entries.push(EntrySpec {
                name: e.name.clone(),
                service,
                op: op_ref(&format!("{p}.op"), service, &e.op)?,
                priority: e.priority,
                arrivals: match e.arrivals {
                    WireArrivals::Poisson(rate) => Arrivals::Poisson { rate },
                    WireArrivals::Burst { at, count } => Arrivals::Burst { at, count },
                    WireArrivals::Periodic {
                        agents,
                        batch,
                        period,
                        offsets,
                    } => Arrivals::Periodic {
                        agents,
                        batch,
                        period,
                        offsets,
                    },
                },
            });
        }
        let mut events = Vec::with_capacity(w.events.len());
        for (i, ev) in w.events.iter().enumerate() {
            let p = format!("events[{i}]");
            let svc = |what: &str, r: &Ref| {
                resolve(&format!("{p}.{what}.service"), r, &svc_names, "service")
            };
            let action = match (&ev.scale, &ev.shed, &ev.flush) {
                (Some(s), None, None) => Action::Scale {
                    service: svc("scale", &s.service)?,
                    instances: s.instances,
                    lb_delay: s.lb_delay,
                },
                (None, Some(s), None) => Action::Shed {
                    service: svc("shed", &s.service)?,
                    max_queue: s.max_queue,
                },
                (None, None, Some(s)) => Action::Flush {
                    service: svc("flush", &s.service)?,
                },
                _ => {
                    return Err(bad(
                        &p,
                        "?".into(),
                        "one of scale, shed, flush (with \"at\")",
                    ))
                }
            };
            events.push(TimedEvent { at: ev.at, action });
        }
        Ok(Topology {
            start: w.start,
            interval: w.interval,
            services,
            edges,
            entries,
            events,
        })
    }

    /// The topology as a JSON value: every field written out, references by name,
    /// durations and instants in their canonical text, guard configs in full.
    pub fn to_value(&self) -> Value {
        let svc = |i: usize| {
            self.services
                .get(i)
                .map_or(Ref::Index(i), |s| Ref::Name(s.name.clone()))
        };
        let op = |s: usize, o: usize| {
            self.services
                .get(s)
                .and_then(|x| x.ops.get(o))
                .map_or(Ref::Index(o), |x| Ref::Name(x.name.clone()))
        };
        let edge = |i: usize| {
            self.edges
                .get(i)
                .map_or(Ref::Index(i), |e| Ref::Name(e.name.clone()))
        };
        let w = WireTopology {
            start: self.start,
            interval: self.interval,
            services: self
                .services
                .iter()
                .map(|s| WireService {
                    name: s.name.clone(),
                    instances: s.instances,
                    servers: s.servers,
                    client: s.client,
                    queue: s.queue,
                    admission: s.admission,
                    enforce_deadline: s.enforce_deadline,
                    slowdowns: s.slowdowns.clone(),
                    outages: s.outages.clone(),
                    budgets: s.budgets.clone(),
                    bulkheads: s.bulkheads.clone(),
                    limiters: s.limiters.clone(),
                    balance: s.balance,
                    fleet: s.fleet.clone(),
                    ops: s
                        .ops
                        .iter()
                        .map(|o| WireOp {
                            name: o.name.clone(),
                            steps: o
                                .steps
                                .iter()
                                .map(|st| match st {
                                    Step::Work(w) => WireStep {
                                        work: Some(w.time),
                                        commit: Some(w.commit),
                                        call: None,
                                    },
                                    Step::Call(e) => WireStep {
                                        work: None,
                                        commit: None,
                                        call: Some(edge(*e)),
                                    },
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .map(|e| WireEdge {
                    name: e.name.clone(),
                    from: svc(e.from),
                    to: svc(e.to),
                    op: Some(op(e.to, e.op)),
                    priority: e.priority,
                    optional: e.optional,
                    record_latency: e.record_latency,
                    policy: e.policy,
                })
                .collect(),
            entries: self
                .entries
                .iter()
                .map(|e| WireEntry {
                    name: e.name.clone(),
                    service: svc(e.service),
                    op: Some(op(e.service, e.op)),
                    priority: e.priority,
                    arrivals: match e.arrivals {
                        Arrivals::Poisson { rate } => WireArrivals::Poisson(rate),
                        Arrivals::Burst { at, count } => WireArrivals::Burst { at, count },
                        Arrivals::Periodic {
                            agents,
                            batch,
                            period,
                            offsets,
                        } => WireArrivals::Periodic {
                            agents,
                            batch,
                            period,
                            offsets,
                        },
                    },
                })
                .collect(),
            events: self
                .events
                .iter()
                .map(|ev| {
                    let mut w = WireEvent {
                        at: ev.at,
                        scale: None,
                        shed: None,
                        flush: None,
                    };
                    match ev.action {
                        Action::Scale {
                            service,
                            instances,
                            lb_delay,
                        } => {
                            w.scale = Some(WireScale {
                                service: svc(service),
                                instances,
                                lb_delay,
                            })
                        }
                        Action::Shed { service, max_queue } => {
                            w.shed = Some(WireShed {
                                service: svc(service),
                                max_queue,
                            })
                        }
                        Action::Flush { service } => {
                            w.flush = Some(WireFlush {
                                service: svc(service),
                            })
                        }
                    }
                    w
                })
                .collect(),
        };
        // Every value above serialises (no map with non-string keys, no NaN in a
        // validated config); a failure would be a bug, shown rather than hidden.
        serde_json::to_value(&w)
            .unwrap_or_else(|e| Value::String(format!("unserialisable topology: {e}")))
    }

    /// The topology as JSON text.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_follow_paths() {
        assert_eq!(
            pointer("edges[3].policy.breaker"),
            "/edges/3/policy/breaker"
        );
        assert_eq!(
            pointer("services[0].admission.limits[2]"),
            "/services/0/admission/limits/2"
        );
    }

    #[test]
    fn a_queue_discipline_is_guards_cores_config() {
        let t = Topology::from_json(
            r#"{"services": [{"name": "s", "queue": {"discipline": {"capacity": 0}},
                              "ops": [{"name": "w"}]}]}"#,
        )
        .unwrap_err();
        assert!(
            t.to_string()
                .contains("services[0].queue.discipline.capacity"),
            "{t}"
        );
    }
}
