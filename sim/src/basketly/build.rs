//! From a Basketly [`Config`] to a generic [`Topology`].
//!
//! ```text
//! app (client)  --app->shop-api.{product,cart,checkout}-->  shop-api (instances x threads)
//!   shop-api.product  : work 10 ms
//!   shop-api.cart     : work 10 ms, call stock.view   (optional with the brownout)
//!   shop-api.checkout : work 10 ms, call stock.reserve
//! stock (1 x 128 workers)  view / reserve : [stall], call db.read / db.write
//! db (1 x 8 connections)   read : query;  write : query + commit
//! agents (client, Replay P) --> spare (reads at the database's spare capacity)
//! ```

use guards::schema;
use guards_core::limiter::LimiterConfig;
use guards_core::retry_budget::RetryBudgetConfig;
use guards_core::retry_policy::Idempotency;
use guards_core::{Nanos, Priority};

use super::config::{check, check_limit, Config, OpsAction};
use crate::error::SimError;
use crate::topology::{
    Action, Arrivals, CallPolicy, Dist, EdgeSpec, EntrySpec, FleetAllowance, FleetGuard, FleetSpec,
    OpSpec, Outage, ServiceSpec, Slowdown, Step, TimedEvent, Topology, WorkSpec,
};

/// Service indices.
pub(crate) const APP: usize = 0;
pub(crate) const SHOPAPI: usize = 1;
pub(crate) const STOCK: usize = 2;
pub(crate) const DB: usize = 3;
pub(crate) const AGENTS: usize = 4;
pub(crate) const SPARE: usize = 5;

/// Edge indices.
pub(crate) const E_PRODUCT: usize = 0;
pub(crate) const E_CART: usize = 1;
pub(crate) const E_CHECKOUT: usize = 2;
pub(crate) const E_VIEW: usize = 3;
pub(crate) const E_RESERVE: usize = 4;
pub(crate) const E_READ: usize = 5;
pub(crate) const E_WRITE: usize = 6;
pub(crate) const E_AGENT: usize = 7;

/// Priority of a reserve (served before any view) and of a view.
pub(crate) const RESERVE: Priority = Priority::CRITICAL_PLUS;
pub(crate) const VIEW: Priority = Priority::CRITICAL;

fn service(name: &str, instances: u32, servers: u32, ops: Vec<OpSpec>) -> ServiceSpec {
    ServiceSpec::new(name, instances, servers, ops)
}

fn op(name: &str, steps: Vec<Step>) -> OpSpec {
    OpSpec {
        name: name.into(),
        steps,
    }
}

fn work(time: Dist) -> Step {
    Step::Work(WorkSpec {
        time,
        commit: false,
    })
}

fn hop_policy(h: &super::config::Hop) -> CallPolicy {
    CallPolicy {
        retry: Some(h.retry),
        overloaded_is_transient: h.overloaded_is_transient,
        attempt_timeout: h.attempt_timeout,
        deadline: h.deadline,
        margin: h.margin,
        cancel: h.cancel,
        ..CallPolicy::default()
    }
}

impl Config {
    /// The topology this configuration describes.
    pub fn topology(&self) -> Result<Topology, SimError> {
        if self.until <= self.start {
            return Err(SimError::bad_value(
                "until",
                &crate::topology::clock::format_millis(self.until),
                "a time after start",
            ));
        }
        self.check_guards()?;
        // Clients.
        let mut app = service(
            "app",
            1,
            1,
            vec![
                op("product", vec![Step::Call(E_PRODUCT)]),
                op("cart", vec![Step::Call(E_CART)]),
                op("checkout", vec![Step::Call(E_CHECKOUT)]),
            ],
        );
        app.client = true;

        // shop-api.
        let work_time = if self.shopapi_work_exp {
            Dist::Exp(self.shopapi_work)
        } else {
            Dist::Const(self.shopapi_work)
        };
        let mut shop = service(
            "shop-api",
            self.shopapi_instances,
            self.shopapi_threads,
            vec![
                op("product", vec![work(work_time)]),
                op("cart", vec![work(work_time), Step::Call(E_VIEW)]),
                op("checkout", vec![work(work_time), Step::Call(E_RESERVE)]),
            ],
        );
        shop.balance = self.balance;
        shop.queue.deadline_check = self.shopapi_deadline_check;
        if self.budget_on {
            shop.budgets
                .push(RetryBudgetConfig::TokenBucket(self.budget));
        }
        if self.bulkhead_on {
            match self.bulkhead_limit {
                Some(limit) => shop.limiters.push(LimiterConfig {
                    limit,
                    ..schema::LIMITER.defaults()
                }),
                None => shop.bulkheads.push(self.bulkhead),
            }
        }
        shop.fleet = self.fleet_spec()?;
        if let Some(b) = self.burst {
            // C3's burst: every cart view arriving at that instant fails at once.
            shop.outages.push(Outage {
                start: b.at,
                end: b.at.saturating_add(Nanos::new(1)),
            });
        }

        // stock.
        let stall = |edge: usize| {
            let mut steps = Vec::new();
            if self.stock_stall_p > 0.0 {
                steps.push(work(Dist::Bernoulli {
                    p: self.stock_stall_p,
                    value: self.stock_stall,
                }));
            }
            steps.push(Step::Call(edge));
            steps
        };
        let mut stock = service(
            "stock",
            1,
            self.stock_workers,
            vec![op("view", stall(E_READ)), op("reserve", stall(E_WRITE))],
        );
        stock.queue.deadline_check = self.stock_deadline_check;
        if self.admission_on {
            // Index = priority level: reserves are level 0, views level 1.
            stock.admission = Some(self.admission);
        }

        // The database.
        let q = Dist::Exp(self.db_query);
        let mut db = service(
            "db",
            1,
            self.db_connections,
            vec![
                op("read", vec![work(q)]),
                op(
                    "write",
                    vec![Step::Work(WorkSpec {
                        time: q,
                        commit: true,
                    })],
                ),
            ],
        );
        db.queue.deadline_check = self.db_deadline;
        db.enforce_deadline = self.db_deadline;
        if self.codel_on {
            db.queue.discipline = Some(self.codel);
        }
        if self.hiccup {
            db.slowdowns.push(Slowdown {
                start: self.hiccup_start,
                end: self.hiccup_end,
                factor: self.hiccup_factor,
            });
        }

        let mut services = vec![app, shop, stock, db];

        // Edges.
        let app_edge = |name: &str, op: usize| EdgeSpec {
            name: format!("app->shop-api.{name}"),
            from: APP,
            to: SHOPAPI,
            op,
            priority: None,
            optional: false,
            record_latency: false,
            policy: hop_policy(&self.app),
        };
        let mut stock_policy = hop_policy(&self.stock_call);
        stock_policy.give_up_as_overloaded = self.reply_overloaded;
        stock_policy.budget = self.budget_on.then_some(0);
        stock_policy.bulkhead = (self.bulkhead_on && self.bulkhead_limit.is_none()).then_some(0);
        stock_policy.limiter = (self.bulkhead_on && self.bulkhead_limit.is_some()).then_some(0);
        stock_policy.breaker = self.breaker_on.then_some(self.breaker);
        stock_policy.breaker_ignores_overloaded = self.breaker_ignores_overloaded;
        let mut view_policy = stock_policy;
        view_policy.hedge = self.hedge_on.then_some(self.hedge);
        let mut reserve_policy = stock_policy;
        reserve_policy.idempotency = if self.idempotency_key {
            Idempotency::KeyedSideEffect
        } else {
            // As shipped, shop-api retries reserves as if they were safe to repeat.
            Idempotency::Idempotent
        };
        let db_policy = hop_policy(&self.db_call);
        let mut edges = vec![
            app_edge("product", 0),
            app_edge("cart", 1),
            app_edge("checkout", 2),
            EdgeSpec {
                name: "shop-api->stock.view".into(),
                from: SHOPAPI,
                to: STOCK,
                op: 0,
                priority: Some(VIEW),
                optional: self.brownout,
                record_latency: true,
                policy: view_policy,
            },
            EdgeSpec {
                name: "shop-api->stock.reserve".into(),
                from: SHOPAPI,
                to: STOCK,
                op: 1,
                priority: Some(RESERVE),
                optional: false,
                record_latency: true,
                policy: reserve_policy,
            },
            EdgeSpec {
                name: "stock->db.read".into(),
                from: STOCK,
                to: DB,
                op: 0,
                priority: None,
                optional: false,
                record_latency: false,
                policy: db_policy,
            },
            EdgeSpec {
                name: "stock->db.write".into(),
                from: STOCK,
                to: DB,
                op: 1,
                priority: None,
                optional: false,
                record_latency: false,
                policy: db_policy,
            },
        ];

        let mut entries = vec![
            EntrySpec {
                name: "product".into(),
                service: APP,
                op: 0,
                priority: Priority::CRITICAL,
                arrivals: Arrivals::Poisson {
                    rate: self.rate_product,
                },
            },
            EntrySpec {
                name: "cart".into(),
                service: APP,
                op: 1,
                priority: Priority::CRITICAL,
                arrivals: Arrivals::Poisson {
                    rate: self.rate_cart,
                },
            },
            EntrySpec {
                name: "checkout".into(),
                service: APP,
                op: 2,
                priority: Priority::CRITICAL,
                arrivals: Arrivals::Poisson {
                    rate: self.rate_checkout,
                },
            },
        ];
        if let Some(b) = self.burst {
            entries.push(EntrySpec {
                name: "burst".into(),
                service: APP,
                op: 1,
                priority: Priority::CRITICAL,
                arrivals: Arrivals::Burst {
                    at: b.at,
                    count: b.count,
                },
            });
        }

        if let Some(a) = self.agents {
            // Replay P: periodic readers against the database's spare read capacity,
            // served first in, first out at `capacity` reads per second.
            let mut agents = service(
                "agents",
                1,
                1,
                vec![op("reread", vec![Step::Call(E_AGENT)])],
            );
            agents.client = true;
            let per_read = Nanos::from_secs_f64(1.0 / a.capacity).unwrap_or(Nanos::new(1));
            let spare = service(
                "spare",
                1,
                1,
                vec![op("read", vec![work(Dist::Const(per_read))])],
            );
            services.push(agents);
            services.push(spare);
            edges.push(EdgeSpec {
                name: "agents->spare.read".into(),
                from: AGENTS,
                to: SPARE,
                op: 0,
                priority: None,
                optional: false,
                record_latency: false,
                policy: CallPolicy::default(),
            });
            entries.push(EntrySpec {
                name: "agents".into(),
                service: AGENTS,
                op: 0,
                priority: Priority::SHEDDABLE,
                arrivals: Arrivals::Periodic {
                    agents: a.agents,
                    batch: a.reads,
                    period: a.period,
                    offsets: a.offsets,
                },
            });
        }

        let mut events = Vec::new();
        if let Some((at, n)) = self.scale {
            events.push(TimedEvent {
                at,
                action: Action::Scale {
                    service: SHOPAPI,
                    instances: n,
                    lb_delay: self.scale_lb_delay,
                },
            });
        }
        if let Some((at, a)) = self.ops {
            events.push(TimedEvent {
                at,
                action: match a {
                    OpsAction::Shed => Action::Shed {
                        service: SHOPAPI,
                        max_queue: 0,
                    },
                    OpsAction::Flush => Action::Flush { service: SHOPAPI },
                },
            });
        }

        Ok(Topology {
            start: self.start,
            interval: self.interval,
            services,
            edges,
            entries,
            events,
        })
    }

    /// shop-api's fleet (`fleet.*`): the stock bulkhead's allowance `stock` and the retry
    /// budget's burst `retry_burst`, each measured when its guard is on and enforced when
    /// its allowance is set; `None` without any `fleet` setting.
    fn fleet_spec(&self) -> Result<Option<FleetSpec>, SimError> {
        let f = &self.fleet;
        if !f.on && f.stock.is_none() && f.retry_burst.is_none() {
            return Ok(None);
        }
        let mut allowances = Vec::new();
        let bulkhead = self.bulkhead_on && self.bulkhead_limit.is_none();
        if bulkhead {
            allowances.push(FleetAllowance {
                name: "stock".into(),
                guard: FleetGuard::Bulkhead(0),
                allowance: f.stock,
            });
        } else if let Some(a) = f.stock {
            return Err(SimError::bad_value(
                "fleet.stock",
                &a.to_string(),
                "a fleet-wide allowance of the stock bulkhead: switch it on (bulkhead=on, \
                 without bulkhead.limit)",
            ));
        }
        if self.budget_on {
            allowances.push(FleetAllowance {
                name: "retry_burst".into(),
                guard: FleetGuard::Budget(0),
                allowance: f.retry_burst,
            });
        } else if let Some(a) = f.retry_burst {
            return Err(SimError::bad_value(
                "fleet.retry_burst",
                &a.to_string(),
                "a fleet-wide burst of the retry budget: switch it on (budget=on)",
            ));
        }
        let ttl = f
            .ttl
            .unwrap_or(Nanos::new(f.sync_interval.as_u64().saturating_mul(3)));
        if ttl.as_u64() < f.sync_interval.as_u64().saturating_mul(2) {
            return Err(SimError::bad_value(
                "fleet.ttl_ms",
                &format!("{}", ttl.as_u64() as f64 / 1e6),
                &format!(
                    "at least 2 x fleet.sync_interval_ms ({} ms), as the fleet agent requires",
                    f.sync_interval.as_u64().saturating_mul(2) as f64 / 1e6
                ),
            ));
        }
        Ok(Some(FleetSpec {
            sync_interval: f.sync_interval,
            ttl: f.ttl,
            allowances,
        }))
    }

    /// Core's check of every guard switched on, reported on the override key at fault
    /// (`breaker.window_duration`, `stock_call.retry.backoff.cap`, ...).
    fn check_guards(&self) -> Result<(), SimError> {
        for (name, h) in [
            ("app", &self.app),
            ("stock_call", &self.stock_call),
            ("db_call", &self.db_call),
        ] {
            check(&format!("{name}.retry"), &schema::RETRY_POLICY, &h.retry)?;
        }
        if self.budget_on {
            check("budget", &schema::TOKEN_BUDGET, &self.budget)?;
        }
        if self.admission_on {
            check_limit("admission", &self.admission.limit)?;
            check("admission", &schema::ADMISSION, &self.admission)?;
        }
        if self.codel_on {
            check("codel", &schema::QUEUE_DISCIPLINE, &self.codel)?;
        }
        if self.breaker_on {
            check("breaker", &schema::CIRCUIT_BREAKER, &self.breaker)?;
        }
        if self.bulkhead_on {
            match &self.bulkhead_limit {
                Some(l) => check_limit("bulkhead", l)?,
                None => check("bulkhead", &schema::BULKHEAD, &self.bulkhead)?,
            }
        }
        if self.hedge_on {
            check("hedge", &schema::HEDGING, &self.hedge)?;
        }
        Ok(())
    }
}
