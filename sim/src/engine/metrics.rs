//! Per-interval counters and gauges, and how they become named output columns.
//!
//! Counters are plain integers bumped by the engine and closed into a history row at each
//! interval boundary. Gauges (queue lengths, calls inside, breaker states) are read at the
//! end of the interval; servers busy is a time average over the interval.

use guards_core::Nanos;

macro_rules! counters {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident => $col:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Default, Clone, Copy)]
        pub(crate) struct $name {
            $($(#[$fm])* pub $field: u64,)*
        }

        impl $name {
            /// Column names and values, in declaration order.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$(($col, self.$field),)*]
            }
        }
    };
}

counters! {
    /// Per request type.
    EntryCounters {
        /// New actions.
        offered => "offered",
        /// Actions answered in full.
        full => "full",
        /// Actions answered with a fallback for an optional part.
        degraded => "degraded",
        /// Actions that failed.
        failed => "failed",
    }
}

counters! {
    /// Per call edge (fleet-wide over caller instances).
    EdgeCounters {
        /// Attempts sent to the callee (first attempts, retries, probes, hedges).
        calls => "calls",
        /// First attempts.
        first => "first",
        /// Retries sent.
        retries => "retries",
        /// Hedges sent.
        hedges => "hedges",
        /// Attempts that were breaker probes.
        probes => "probes",
        /// Attempts answered successfully.
        ok => "ok",
        /// Attempts answered with an ordinary error.
        errors => "errors",
        /// Attempts answered "overloaded" (refused or shed by the callee).
        overloaded => "overloaded",
        /// Attempts that ran out of time (caller timeout or callee deadline).
        timeouts => "timeouts",
        /// Attempts the caller's breaker refused.
        breaker_rejections => "breaker_rejections",
        /// Attempts the caller's bulkhead refused.
        gate_rejections => "bulkhead_rejections",
        /// Attempts the caller's limiter refused.
        limiter_rejections => "limiter_rejections",
        /// Retries the retry budget refused.
        budget_refusals => "budget_refusals",
        /// Attempts not started because no time was left.
        no_time => "no_time",
        /// Calls that failed for good and were served a fallback.
        fallbacks => "fallbacks",
        /// Calls that failed for good without a fallback.
        failures => "failures",
    }
}

counters! {
    /// Per service (fleet-wide over instances).
    ServiceCounters {
        /// Calls that arrived at the door.
        arrivals => "arrivals",
        /// Calls refused by admission control.
        refused => "refused",
        /// Calls refused by an operator's shedding.
        shed => "shed",
        /// Queued calls dropped by an operator's flush.
        flushed => "flushed",
        /// Operations finished successfully.
        done => "done",
        /// Of `done`: finished when some caller up the chain had already given up.
        stale => "stale",
        /// Operations that ended in failure.
        failed => "failed",
        /// Calls dropped at dequeue or cut because their deadline passed.
        dropped_deadline => "dropped_deadline",
        /// Calls dropped by the queue's age limit.
        dropped_age => "dropped_age",
        /// Calls cancelled by their caller.
        cancelled => "cancelled",
        /// Side effects committed.
        commits => "commits",
        /// Commits of an action that had already committed.
        dup_commits => "duplicate_commits",
        /// Actions committed for the second time (counted once each).
        dup_actions => "duplicate_actions",
        /// Calls that got a server after waiting in the queue (or at once).
        started => "started",
    }
}

/// Gauges of one service at the end of an interval.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ServiceGauges {
    pub queue: u64,
    pub inside_avg: f64,
    pub busy_now: u64,
    pub wait_sum: u64,
    pub wait_max: u64,
    pub inside: u64,
    pub busy: f64,
    pub instances: u64,
}

/// Gauges of one edge's breakers at the end of an interval.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct EdgeGauges {
    pub open: u64,
    pub half_open: u64,
    /// Mean limit of the callers' limiters on this edge (0 without one).
    pub limit: f64,
}

/// All counters of the current interval and the history of closed ones.
#[derive(Debug)]
pub(crate) struct Metrics {
    pub interval: Nanos,
    pub next_boundary: Nanos,
    pub entry: Vec<EntryCounters>,
    pub edge: Vec<EdgeCounters>,
    pub svc: Vec<ServiceCounters>,
    pub hist_entry: Vec<Vec<EntryCounters>>,
    pub hist_edge: Vec<Vec<EdgeCounters>>,
    pub hist_svc: Vec<Vec<ServiceCounters>>,
    pub hist_svc_gauges: Vec<Vec<ServiceGauges>>,
    pub hist_edge_gauges: Vec<Vec<EdgeGauges>>,
    /// Per edge, the latencies of the whole calls that succeeded in the current interval.
    pub edge_latency: Vec<Vec<Nanos>>,
    /// Per edge and closed interval: P50, P99 and P99.9 of those latencies, ms (NaN: none).
    pub hist_edge_latency: Vec<Vec<[f64; 3]>>,
    pub rows: usize,
}

/// The percentiles of each interval's call latencies, per edge.
pub(crate) const LATENCY_QUANTILES: [(&str, f64); 3] =
    [("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999)];

impl Metrics {
    pub fn new(start: Nanos, interval: Nanos, entries: usize, edges: usize, svcs: usize) -> Self {
        Metrics {
            interval,
            next_boundary: start.saturating_add(interval),
            entry: vec![EntryCounters::default(); entries],
            edge: vec![EdgeCounters::default(); edges],
            svc: vec![ServiceCounters::default(); svcs],
            hist_entry: vec![Vec::new(); entries],
            hist_edge: vec![Vec::new(); edges],
            hist_svc: vec![Vec::new(); svcs],
            hist_svc_gauges: vec![Vec::new(); svcs],
            hist_edge_gauges: vec![Vec::new(); edges],
            edge_latency: vec![Vec::new(); edges],
            hist_edge_latency: vec![Vec::new(); edges],
            rows: 0,
        }
    }

    /// Bytes one closed interval takes in the history.
    pub fn row_bytes(entries: usize, edges: usize, svcs: usize) -> u64 {
        use core::mem::size_of;
        (entries * size_of::<EntryCounters>()
            + edges * (size_of::<EdgeCounters>() + size_of::<EdgeGauges>() + size_of::<[f64; 3]>())
            + svcs * (size_of::<ServiceCounters>() + size_of::<ServiceGauges>())) as u64
    }

    /// Close the current interval with the given gauges.
    pub fn close(&mut self, svc_gauges: &[ServiceGauges], edge_gauges: &[EdgeGauges]) {
        for (h, c) in self.hist_entry.iter_mut().zip(self.entry.iter_mut()) {
            h.push(std::mem::take(c));
        }
        for (h, c) in self.hist_edge.iter_mut().zip(self.edge.iter_mut()) {
            h.push(std::mem::take(c));
        }
        for (h, c) in self.hist_svc.iter_mut().zip(self.svc.iter_mut()) {
            h.push(std::mem::take(c));
        }
        for (h, g) in self.hist_svc_gauges.iter_mut().zip(svc_gauges) {
            h.push(*g);
        }
        for (h, g) in self.hist_edge_gauges.iter_mut().zip(edge_gauges) {
            h.push(*g);
        }
        for (h, lat) in self
            .hist_edge_latency
            .iter_mut()
            .zip(&mut self.edge_latency)
        {
            lat.sort_unstable();
            h.push(LATENCY_QUANTILES.map(|(_, q)| {
                crate::result::quantile_sorted(lat, q).map_or(f64::NAN, |d| d.as_u64() as f64 / 1e6)
            }));
            lat.clear();
        }
        self.rows += 1;
        self.next_boundary = self.next_boundary.saturating_add(self.interval);
    }
}
