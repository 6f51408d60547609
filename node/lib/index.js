'use strict';
// guards for Node: overload guards on the lock-free Rust core of this repository.
// See node/README.md.

const native = require('./native');
const errors = require('./errors');
const guards = require('./guards');
const { Retry, retry } = require('./retry');
const { Guarded, guarded } = require('./guarded');
const { createFetch } = require('./fetch');
const middleware = require('./middleware');
const { prometheusCollector } = require('./prometheus');
const { classifyError, NAMES: OUTCOMES } = require('./outcome');

module.exports = {
  // guards (native, subclassed where the layer adds execute / events / sharing)
  CircuitBreaker: guards.CircuitBreaker,
  KeyedBreakers: guards.KeyedBreakers,
  Bulkhead: guards.Bulkhead,
  Limiter: guards.Limiter,
  Admission: guards.Admission,
  RetryBudget: guards.RetryBudget,
  RetryPolicy: native.RetryPolicy,
  RetryDriver: native.RetryDriver,
  Backoff: native.Backoff,
  Deadline: native.Deadline,
  Hedging: native.Hedging,
  LatencyTracker: native.LatencyTracker,
  AdaptiveThrottle: native.AdaptiveThrottle,
  QueueDiscipline: native.QueueDiscipline,
  Brownout: native.Brownout,
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
  classifyHttp: native.classifyHttp,
  parseRetryAfter: native.parseRetryAfter,
  outcomeOfStatus: native.outcomeOfStatus,
  formatHttpDate: native.formatHttpDate,
  encodeGrpcTimeout: native.encodeGrpcTimeout,
  parseGrpcTimeout: native.parseGrpcTimeout,
  stableOffsetMs: native.stableOffsetMs,
  configSchema: native.configSchema,
  version: native.nativeVersion(),
  // errors
  ...Object.fromEntries(Object.entries(errors).filter(([k]) => k !== 'badOption')),
};
