// The ES module entry of the npm package `guards` (package.json `exports`, condition
// `import`): the CommonJS entry's exports, by name and as the default export. The names
// are listed because the CommonJS object is built with a spread that Node cannot analyse;
// test/esm.test.js checks this list against lib/index.js.
import guards from './index.js';

export default guards;
export const {
  CircuitBreaker, KeyedBreakers, Bulkhead, Limiter, Admission, RetryBudget, RetryPolicy,
  Hedging, LatencyTracker, AdaptiveThrottle, Brownout, BrownoutTable, Backoff, RetryDriver,
  RetryReceipt, Deadline, QueueDiscipline, Limit,
  Region, RegionCircuitBreaker, RegionKeyedBreakers, RegionBulkhead, RegionLimiter,
  RegionAdmission, RegionRetryBudget, RegionHedging, RegionLatencyTracker,
  RegionAdaptiveThrottle, RegionBrownout, RegionPermit, RegionRetryReceipt, Fleet,
  Retry, retry, Guarded, guarded, createFetch,
  httpAdmission, expressAdmission, fastifyAdmission, priorityFromHeader, prometheusCollector,
  classifyError, OUTCOMES,
  nowNs, outcomeVerdicts, classifyHttp, parseRetryAfter, parseHttpDate, outcomeOfStatus,
  formatHttpDate, encodeGrpcTimeout, parseGrpcTimeout, encodeMillis, parseMillis,
  stableOffsetMs, nextStableRun, configSchema, version,
  GuardsError, RejectedError, BreakerOpenError, BreakersFullError, BulkheadFullError,
  LimitExceededError, AdmissionRejectedError, QueueFullError, ThrottledError,
  BudgetExhaustedError, RetriesExhaustedError, DeadlineExceededError, AttemptTimeoutError,
  PermitError, RetryDriverError, InternalError, RegionError, GuardMismatchError, FleetError,
} = guards;
