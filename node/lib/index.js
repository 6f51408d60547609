'use strict';
// guards for Node: overload guards on the lock-free Rust core of this repository.
// See node/README.md; the types are in index.d.ts.

const native = require('./native');
const errors = require('./errors');
const guards = require('./guards');
const { Retry, retry } = require('./retry');
const { Guarded, guarded } = require('./guarded');
const { createFetch } = require('./fetch');
const middleware = require('./middleware');
const { prometheusCollector } = require('./prometheus');
const { classifyError, NAMES: OUTCOMES } = require('./outcome');
const region = require('./region');

module.exports = {
  // guards (native, subclassed where the layer adds execute / events / sharing)
  CircuitBreaker: guards.CircuitBreaker,
  KeyedBreakers: guards.KeyedBreakers,
  Bulkhead: guards.Bulkhead,
  Limiter: guards.Limiter,
  Admission: guards.Admission,
  RetryBudget: guards.RetryBudget,
  RetryPolicy: guards.RetryPolicy,
  Hedging: guards.Hedging,
  LatencyTracker: guards.LatencyTracker,
  AdaptiveThrottle: guards.AdaptiveThrottle,
  Brownout: guards.Brownout,
  BrownoutTable: native.BrownoutTable,
  Backoff: guards.Backoff,
  RetryDriver: native.RetryDriver,
  RetryReceipt: native.RetryReceipt,
  Deadline: native.Deadline,
  QueueDiscipline: native.QueueDiscipline,
  Limit: native.Limit,
  // host-wide guards in a region file shared by processes
  Region: region.Region,
  RegionCircuitBreaker: region.RegionCircuitBreaker,
  RegionKeyedBreakers: region.RegionKeyedBreakers,
  RegionBulkhead: region.RegionBulkhead,
  RegionLimiter: region.RegionLimiter,
  RegionAdmission: region.RegionAdmission,
  RegionRetryBudget: region.RegionRetryBudget,
  RegionHedging: region.RegionHedging,
  RegionLatencyTracker: region.RegionLatencyTracker,
  RegionAdaptiveThrottle: region.RegionAdaptiveThrottle,
  RegionBrownout: region.RegionBrownout,
  RegionPermit: region.RegionPermit,
  RegionRetryReceipt: region.RegionRetryReceipt,
  // fleet-wide allowances through Redis (docs/fleet.md)
  Fleet: native.Fleet,
  // the idiomatic layer
  Retry, retry, Guarded, guarded, createFetch,
  httpAdmission: middleware.httpAdmission,
  expressAdmission: middleware.expressAdmission,
  fastifyAdmission: middleware.fastifyAdmission,
  priorityFromHeader: middleware.priorityFromHeader,
  prometheusCollector,
  classifyError,
  OUTCOMES,
  // functions of the core
  nowNs: native.nowNs,
  outcomeVerdicts: native.outcomeVerdicts,
  classifyHttp: native.classifyHttp,
  parseRetryAfter: native.parseRetryAfter,
  parseHttpDate: native.parseHttpDate,
  outcomeOfStatus: native.outcomeOfStatus,
  formatHttpDate: native.formatHttpDate,
  encodeGrpcTimeout: native.encodeGrpcTimeout,
  parseGrpcTimeout: native.parseGrpcTimeout,
  encodeMillis: native.encodeMillis,
  parseMillis: native.parseMillis,
  stableOffsetMs: native.stableOffsetMs,
  nextStableRun: native.nextStableRun,
  configSchema: native.configSchema,
  version: native.nativeVersion(),
  // errors
  ...Object.fromEntries(Object.entries(errors).filter(([k]) => k !== 'badOption')),
};
