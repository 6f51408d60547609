'use strict';
// Writes index.d.ts: the option interfaces and shared types, generated from the native
// addon's config schemas (ffi's `schema`, one per config: the names, units, defaults and
// ranges the addon validates against), followed by the classes and functions napi-rs
// generated from the Rust sources (the file given as the first argument). Run by
// `make node` (and checked for drift by `make node-dts-check`).
const fs = require('node:fs');
const path = require('node:path');
const n = require('../guards.node');

const configs = [
  ['CircuitBreakerOptions', 'circuit_breaker', '  /** Window cells to allocate (0: fit the window). Default 0. */\n  capacity?: number\n'],
  ['BulkheadOptions', 'bulkhead', ''],
  ['DeadlineOptions', 'deadline', ''],
  ['BackoffOptions', 'backoff', ''],
  ['RetryPolicyOptions', 'retry_policy', '  /** Seed of the jitter (default: from the clock). */\n  seed?: number | bigint\n'],
  ['TokenBudgetOptions', 'token_budget', ''],
  ['GrpcThrottleOptions', 'grpc_throttle', ''],
  ['AwsRetryQuotaOptions', 'aws_retry_quota', ''],
  ['WindowedBudgetOptions', 'windowed_budget', ''],
  ['LatencyTrackerOptions', 'latency_tracker', ''],
  ['HedgingOptions', 'hedging', ''],
  ['AdaptiveThrottleOptions', 'adaptive_throttle', ''],
  ['BrownoutOptions', 'brownout', ''],
  ['QueueDisciplineOptions', 'queue_discipline', ''],
  ['AimdOptions', 'aimd', ''],
  ['VegasOptions', 'vegas', ''],
  ['GradientOptions', 'gradient', ''],
  ['LimiterOptions', 'limiter', '  /** The limit: a fixed number, or an adaptive algorithm with its options. */\n  limit?: number | LimitOptions\n'],
  ['AdmissionOptions', 'admission', '  /** An adaptive (or fixed) limit on the requests inside, beside the per-priority `limits`. */\n  limit?: number | LimitOptions\n'],
];

function tsType(f) {
  switch (f.unit) {
    case 'duration_ms': return 'number | bigint';
    case 'bool': return 'boolean';
    case 'enum': return f.values.map((v) => `'${v}'`).join(' | ');
    case 'flags': return 'number | RefusalKind[]';
    default: return 'number';
  }
}

function fmtDefault(f) {
  if (f.unit === 'enum') return `'${f.default}'`;
  if (f.unit === 'duration_ms') return `${f.default} ms`;
  if (typeof f.default === 'number' && f.default >= 1e18) return 'the largest value';
  return String(f.default);
}

// Nested schema names ("backoff.base", "limits[0]", "partitions[0].share") become nested
// objects and arrays.
function build(fields) {
  const root = { leaves: [], objects: new Map(), arrays: new Map() };
  for (const f of fields) {
    let m;
    if ((m = /^(\w+)\[(\d+)\]\.(\w+)$/.exec(f.name))) {
      const a = root.arrays.get(m[1]) || { item: new Map(), leaf: null };
      if (!a.item.has(m[3])) a.item.set(m[3], f);
      root.arrays.set(m[1], a);
    } else if ((m = /^(\w+)\[(\d+)\]$/.exec(f.name))) {
      const a = root.arrays.get(m[1]) || { item: new Map(), leaf: null };
      a.leaf = a.leaf || f;
      root.arrays.set(m[1], a);
    } else if ((m = /^(\w+)\.(\w+)$/.exec(f.name))) {
      const o = root.objects.get(m[1]) || [];
      o.push({ ...f, name: m[2] });
      root.objects.set(m[1], o);
    } else {
      root.leaves.push(f);
    }
  }
  return root;
}

function doc(f, indent) {
  const range = f.expected ? `; ${f.expected}` : '';
  return `${indent}/** ${f.doc[0].toUpperCase()}${f.doc.slice(1)}. Default ${fmtDefault(f)}${range}. */\n`;
}

let out = `/** How a finished call ended: the call contract's outcomes (docs/outcomes.md). */
export type Outcome =
  | 'success' | 'timeout' | 'connection_error' | 'other_transient' | 'throttled'
  | 'overloaded' | 'permanent' | 'rejected' | 'ignored' | 'cancelled'
/** Whether a call may be repeated. */
export type Idempotency = 'idempotent' | 'keyed_side_effect' | 'unkeyed_side_effect'
/** Why a retry loop gave up. */
export type GiveUpReason =
  | 'succeeded' | 'permanent' | 'overloaded' | 'not_retryable' | 'attempts_exhausted'
  | 'not_idempotent' | 'retry_after_too_long' | 'deadline_exceeded' | 'budget_exhausted'
  | 'rejected' | 'ignored' | 'cancelled'
/** A refusal's kind, as a brownout decides on it. */
export type RefusalKind =
  | 'breaker_open' | 'bulkhead_full' | 'budget_exhausted' | 'throttled' | 'timeout'
  | 'overloaded' | 'failed'
/** What a RetryDriver asks for next. */
export type RetryStep =
  | {
      /** Make attempt \`number\` now. */
      kind: 'attempt'
      /** The attempt's number, from 1. */
      number: number
      /** Its time budget in ms: min(attempt timeout, time left) minus the margin. */
      budgetMs: number
      /** The instant its budget runs out (bigint ns on the monotonic clock). */
      expiresAt: bigint
      /** Attempts started so far, this one included. */
      attempts: number
    }
  | {
      /** Wait, then ask again. */
      kind: 'wait'
      /** How long to wait, in ms. */
      retryAfterMs: number
      /** The instant the wait ends. */
      retryAt: bigint
      /** Attempts made so far. */
      attempts: number
    }
  | {
      /** The call succeeded: stop. */
      kind: 'succeeded'
      /** Attempts made. */
      attempts: number
    }
  | {
      /** No further attempt: stop. */
      kind: 'give_up'
      /** Why. */
      reason: GiveUpReason
      /** Whether the last answer said the dependency is overloaded (do not retry above either). */
      overloaded: boolean
      /** Attempts made. */
      attempts: number
    }
/** Settings of one request's retry loop (durations in ms, or exact ns as a bigint). */
export interface RetryDriverOptions {
  /** A budget that pays for retries (deposits, charges and refunds by the call contract). */
  budget?: RetryBudget
  /** The request's deadline, an instant (bigint ns on the monotonic clock). */
  deadline?: bigint
  /** The request's time limit from its start (the earlier of this and \`deadline\`). */
  timeoutMs?: number | bigint
  /** The longest one attempt may take (at most a day). Default: no limit beyond the deadline. */
  attemptTimeoutMs?: number | bigint
  /** Kept back from the time left for the answer to travel. Default 0. */
  marginMs?: number | bigint
  /** Default 'idempotent'. */
  idempotency?: Idempotency
}
/** A retry gate: may a retry (or hedge) caused by \`cause\` go at \`now\`? (a budget's question) */
export type RetryGateFunction = (now: bigint, cause: 'timeout' | 'transient' | 'throttled' | 'hedge') => boolean
/** Options of \`RetryPolicy.decide\` (durations in ms, or exact ns as a bigint). */
export interface DecideOptions {
  /** The server's Retry-After (honoured only with 'throttled'). */
  retryAfterMs?: number | bigint
  /** Default 'idempotent'. */
  idempotency?: Idempotency
  /** The deadline's time left (left out: no deadline). */
  timeLeftMs?: number | bigint
  /** The previous wait (decorrelated jitter). */
  prevDelayMs?: number | bigint
  /** A budget asked last (or give \`gate\`). */
  budget?: RetryBudget
  /** A gate asked last (or give \`budget\`). */
  gate?: RetryGateFunction
  /** The instant to decide at (default: the clock). */
  now?: bigint
}
/** Options of a KeyedBreakers set: each key's breaker options, and the number of keys. */
export type KeyedBreakersOptions = Omit<CircuitBreakerOptions, 'capacity'> & {
  /** Keys held at most (rounded up to 4, 16, 64 or 256). Default 64. */
  slots?: number
}
/** A step of the conformance-vector interpreter (see tests/vectors/README.md). */
export interface VectorStep {
  guard: string
  op: string
  /** Arguments: integers as bigints, floats as numbers, bytes as Buffers. */
  args: Record<string, null | boolean | bigint | number | string | Buffer>
  origin: { file: string; case: string; step: number | null; repetition: number; role: 'build' | 'op' | 'release' | 'free' }
}
/** A result for the interpreter: a bigint is an integer, a number a float, a symbol a value the API cannot observe. */
export type VectorResult =
  | null | boolean | bigint | number | string | symbol | Uint8Array
  | VectorResult[] | { [key: string]: VectorResult }
/** Counts of a replay. */
export interface VectorSummary {
  files: number; cases: number; passed: number; partlyObserved: number; failed: number
  notCovered: number; fileErrors: number; compared: number; unobserved: number; ok: boolean
}
/** One case of a replay. */
export interface VectorCase {
  file: string; case: string | null; outcome: 'passed' | 'failed' | 'not_covered' | 'file_error'
  compared?: number; unobserved?: number; op?: string; reason?: string
}
/** A breaker's state word. */
export interface BreakerStatus {
  /** The state. */
  state: 'closed' | 'open' | 'half_open'
  /** How many times the breaker has changed state (a permit of another generation is discarded). */
  generation: number
  /** Half-open probes handed out in this half-open period. */
  probesIssued: number
  /** Half-open probes that succeeded in this half-open period. */
  probesPassed: number
  /** Opens in a row without closing (the open duration grows with it). */
  consecutiveOpens: number
  /** While open: the instant it turns half-open (bigint ns on the monotonic clock). */
  halfOpenAt: bigint
}
/** A circuit breaker's counters (relaxed snapshots, read while traffic flows). */
export interface CircuitBreakerStats {
  /** Ordinary calls recorded as successes (slow ones included). */
  successes: number
  /** Ordinary calls recorded as failures (slow ones included). */
  failures: number
  /** Ordinary calls recorded as slow (success or failure). */
  slowCalls: number
  /** Probes admitted. */
  probesAdmitted: number
  /** Probe successes counted. */
  probeSuccesses: number
  /** Probe failures counted (slow probe successes included). */
  probeFailures: number
  /** Permits handed back without a verdict (ignored, rejected). */
  ignored: number
  /** Outcomes discarded because the breaker had moved to another state or generation. */
  discarded: number
  /** Calls refused because the breaker was open. */
  rejectedOpen: number
  /** Calls refused because every half-open probe slot was taken. */
  rejectedHalfOpen: number
  /** Transitions closed to open. */
  closedToOpen: number
  /** Transitions open to half-open. */
  openToHalfOpen: number
  /** Transitions half-open to closed. */
  halfOpenToClosed: number
  /** Transitions half-open to open. */
  halfOpenToOpen: number
  /** The state now. */
  state: 'closed' | 'open' | 'half_open'
}
/** A bulkhead's counters. */
export interface BulkheadStats {
  /** Permits granted. */
  acquired: number
  /** Calls refused at the cap. */
  rejected: number
  /** Permits released (acquired minus in flight). */
  released: number
  /** Calls in flight now. */
  inFlight: number
  /** The cap. */
  maxConcurrent: number
}
/** A limiter's counters. */
export interface LimiterStats {
  /** Calls admitted. */
  acquired: number
  /** Calls refused, for any reason. */
  rejected: number
  /** Refusals because the limit was reached. */
  rejectedLimitReached: number
  /** Refusals because a priority's fixed cap was reached. */
  rejectedPartitionCap: number
  /** Refusals because the rest of the limit is kept for more important priorities. */
  rejectedReserved: number
  /** Permits given back as successes. */
  succeeded: number
  /** Permits given back as drops (overload signals). */
  dropped: number
  /** Permits given back without a verdict. */
  ignored: number
  /** Sample windows folded into the limit algorithm. */
  windows: number
  /** Folds that changed the (integer) limit. */
  limitChanges: number
  /** Times a due window was left to a thread already folding it. */
  foldsSkipped: number
  /** The current limit. */
  limit: number
  /** Calls in flight now. */
  inFlight: number
  /** Calls refused (any reason), by priority, most important first. */
  rejectedByPriority: number[]
}
/** An admission door's counters. */
export interface AdmissionStats {
  /** Requests admitted. */
  admitted: number
  /** Refusals at a priority's fixed limit. */
  refusedLimitReached: number
  /** Refusals at the adaptive limit or a priority's share of it. */
  refusedOverloaded: number
  /** Permits released as successes. */
  succeeded: number
  /** Permits released as drops (overload signals). */
  dropped: number
  /** Permits released without a verdict. */
  ignored: number
  /** Requests inside now. */
  inFlight: number
  /** The current adaptive (or fixed total) limit, when there is one. */
  limit?: number
  /** Requests refused (either reason), by priority, most important first. */
  refusedByPriority: number[]
}
/** Options of a Region (the capacities apply when this call creates the region). */
export interface RegionOptions {
  /** Named guards it can hold. Default 64; 1..=65536. */
  maxGuards?: number
  /** Permits in flight at once, all guards and processes. Default 4096; 1..=16777216. */
  permitSlots?: number
  /** Bytes for guard state. Default 16 MiB; 4096..=2^40. */
  dataBytes?: number
  /** How long to wait for another process creating a guard (ms, or ns as a bigint). Default 5000 ms. */
  waitTimeout?: number | bigint
  /** Least time between two reclaim scans caused by a full guard (ms, or ns as a bigint). Default 10 ms. */
  reclaimInterval?: number | bigint
  /** Permission bits of a new region file. Default 0o600. */
  mode?: number
  /** Create the region if there is none. Default true. */
  create?: boolean
}
/** Sizes and counters of a region, all processes. */
export interface RegionStats {
  /** Guards created. */
  guards: number
  /** Directory entries (the most guards it can hold). */
  maxGuards: number
  /** Data bytes handed out to guards. */
  dataUsed: number
  /** Data bytes in all. */
  dataBytes: number
  /** Permit records. */
  permitSlots: number
  /** Permits held now, all guards and processes. */
  permitsHeld: number
  /** Permits of dead processes given back to their guards (as \`cancelled\`). */
  reclaimedPermits: number
  /** Records of dead processes that were claimed but never published. */
  reclaimedClaims: number
  /** Reclaim scans run. */
  scans: number
  /** Guards whose creator died while creating them, finished by another process. */
  takeovers: number
}
/** A retry budget's counters. */
export interface RetryBudgetStats {
  /** Credits recorded: first attempts (token bucket, windowed), successes (grpc), successes without a retry (aws). */
  deposits: number
  /** Retries allowed. */
  withdrawals: number
  /** Retries refused. */
  refusals: number
  /** Receipts refunded (aws; 0 in the other modes). */
  refunds: number
  /** Failures reported (grpc; 0 in the other modes). */
  failures: number
  /** The balance now, in tokens. */
  tokens: number
}
/** A limit algorithm and its options. */
export type LimitOptions =
  | ({
      /** Additive increase, multiplicative decrease. */
      algorithm: 'aimd'
    } & AimdOptions)
  | ({
      /** TCP Vegas: the limit follows the queueing the RTTs show. */
      algorithm: 'vegas'
    } & VegasOptions)
  | ({
      /** Gradient2: the limit follows the ratio of long-term to short-term RTT. */
      algorithm: 'gradient'
    } & GradientOptions)
/** Options of a RetryBudget: a mode and that mode's options. */
export type RetryBudgetOptions =
  | ({
      /** A token bucket (the default): each request earns a share of a retry. */
      mode?: 'token_bucket'
    } & TokenBudgetOptions)
  | ({
      /** gRPC retry throttling: successes earn, failures cost. */
      mode: 'grpc'
    } & GrpcThrottleOptions)
  | ({
      /** The AWS retry quota: retries cost, receipts refund. */
      mode: 'aws'
    } & AwsRetryQuotaOptions)
  | ({
      /** A windowed budget: retries at most a ratio of the requests of a sliding window. */
      mode: 'windowed'
    } & WindowedBudgetOptions)
/** Calls, failures and slow calls in a breaker's window now. */
export interface WindowCounts {
  /** Calls in the window. */
  calls: number
  /** Failures among them. */
  failures: number
  /** Slow calls among them. */
  slow: number
}
/** A keyed set's counters. */
export interface KeyedBreakersStats {
  /** Keys held. */
  entries: number
  /** Calls refused for lack of a free slot for a new key. */
  full: number
  /** Keys whose breaker is not closed. */
  open: number
}
/** A bulkhead's size from Little's law. */
export interface BulkheadSize {
  /** ceil(rate × P99 × headroom). */
  maxConcurrent: number
}
/** A retry policy's decision after a failed attempt. */
export type RetryDecision =
  | {
      /** Retry. */
      retry: true
      /** After this wait, in ms. */
      delayMs: number
    }
  | {
      /** Give up. */
      retry: false
      /** Why. */
      reason: GiveUpReason
    }
/** Whether to start an attempt, and with what budget. */
export type AttemptBudgetDecision =
  | {
      /** Start it. */
      decision: 'start'
      /** With this budget, in ms. */
      budgetMs: number
    }
  | {
      /** The deadline has passed. */
      decision: 'expired'
    }
  | {
      /** Too little time is left to be worth an attempt. */
      decision: 'too_little_left'
      /** The time left, in ms. */
      leftMs: number
    }
/** Whether to send a hedge now. */
export type HedgeDecision =
  | {
      /** Send a hedge now. */
      decision: 'hedge_now'
    }
  | {
      /** Not yet: ask again at \`at\`. */
      decision: 'wait_until'
      /** The instant to ask again (bigint ns on the monotonic clock). */
      at: bigint
    }
  | {
      /** No hedge for this request. */
      decision: 'never'
      /** Why. */
      reason: 'not_idempotent' | 'limit_reached' | 'no_latency_data' | 'budget_exhausted'
    }
/** A hedging policy's counters. */
export interface HedgingStats {
  /** Hedges allowed. */
  hedges: number
  /** Decisions that said wait. */
  deferred: number
  /** Refused: the request is not idempotent. */
  notIdempotent: number
  /** Refused: the per-request limit was reached. */
  limitReached: number
  /** Refused: too few latency samples. */
  noLatencyData: number
  /** Refused: the retry gate said no. */
  budgetExhausted: number
}
/** An adaptive throttle's counters, and its rejection probability now. */
export interface AdaptiveThrottleStats {
  /** Requests let through to the backend. */
  admitted: number
  /** Requests refused locally by the throttle. */
  throttled: number
  /** Backend accepts reported. */
  accepted: number
  /** Backend refusals reported. */
  rejectedByBackend: number
  /** Counts dropped because their bucket had been reused by a later time (a lagging now). */
  stale: number
  /** The probability of refusing a request now (0..1). */
  rejectProbability: number
}
/** An adaptive throttle's window. */
export interface ThrottleWindow {
  /** Requests in the window. */
  requests: number
  /** Backend accepts in the window. */
  accepts: number
}
/** A brownout's counters. */
export interface BrownoutStats {
  /** Full answers. */
  full: number
  /** Degraded answers (the fallback served). */
  degraded: number
  /** Errors passed on (fail fast). */
  errors: number
  /** Exempt calls made despite a refusal. */
  proceeded: number
}
/** Latency percentiles over the tracker's windows, in ms. */
export interface LatencySummary {
  /** Samples in the merged windows. */
  count: number
  /** Median. */
  p50Ms: number
  /** 95th percentile. */
  p95Ms: number
  /** 99th percentile. */
  p99Ms: number
  /** 99.9th percentile. */
  p999Ms: number
  /** Largest sample (its bucket's midpoint). */
  maxMs: number
}
/** A latency tracker's counters. */
export interface LatencyTrackerStats {
  /** Samples recorded (saturated ones included). */
  recorded: number
  /** Samples above the largest trackable value, clamped into the last bucket. */
  saturated: number
  /** Samples dropped because their window had been reused by a later one (a lagging now). */
  stale: number
}
/** A waiter served by a queue discipline. */
export interface DequeuedWaiter {
  /** The id it was pushed with. */
  id: number
  /** When it was pushed (bigint ns on the monotonic clock). */
  enqueuedAt: bigint
  /** Its priority. */
  priority: number
  /** Its deadline, if it had one. */
  deadline?: bigint
  /** Served from the oldest end (\`fifo\`) or the newest (\`lifo\`, the queue standing). */
  order: 'fifo' | 'lifo'
}
/** A waiter a queue discipline dropped. */
export interface DroppedWaiter {
  /** The id it was pushed with. */
  id: number
  /** Dropped by the age limit or because its deadline had passed. */
  reason: 'age_limit' | 'deadline'
  /** When it was pushed. */
  enqueuedAt: bigint
  /** Its priority. */
  priority: number
}
/** A queue discipline's counters. */
export interface QueueDisciplineStats {
  /** Waiters accepted by \`push\`. */
  enqueued: number
  /** Waiters served from the oldest end. */
  servedFifo: number
  /** Waiters served from the newest end (queue standing, LIFO on). */
  servedLifo: number
  /** Waiters dropped by the age limit. */
  droppedAgeLimit: number
  /** Waiters dropped because their deadline had passed. */
  droppedDeadline: number
  /** Waiters taken out by \`remove\` (their caller gave up). */
  cancelled: number
  /** Pushes refused because the queue was full. */
  rejectedFull: number
  /** Waiters queued now. */
  length: number
}
/** The outcome of an HTTP answer. */
export interface HttpClassification {
  /** The outcome of the call contract. */
  outcome: Outcome
  /** The server's Retry-After in ms, or null. */
  retryAfterMs: number | null
}
/** What every guard does with an outcome (the call contract's table, docs/outcomes.md). */
export interface OutcomeVerdicts {
  /** The outcome's number. */
  number: number
  /** What an ordinary breaker call records. */
  breakerCall: string
  /** What a half-open probe records. */
  breakerProbe: string
  /** What the bulkhead does. */
  bulkhead: string
  /** What the limiter and the admission door record. */
  limiter: string
  /** What the retry budget records. */
  retryBudget: string
  /** What the adaptive throttle records. */
  adaptiveThrottle: string
  /** Whether the latency is recorded. */
  latency: string
  /** What the retry loop does: retry with a cause, or give up with a reason. */
  retry: {
    /** Retry, for this cause. */
    retry: 'timeout' | 'transient' | 'throttled' | 'hedge'
  } | {
    /** Give up, for this reason. */
    giveUp: GiveUpReason
  }
  /** The refusal kind a brownout decides on, or null. */
  brownout: RefusalKind | null
}
/** One setting of a config schema. */
export interface ConfigField {
  /** The option's name (camelCase; nested ones dotted). */
  name: string
  /** Its unit (\`duration_ms\`, \`count\`, \`bool\`, \`enum\`, ...). */
  unit: string
  /** Its default. */
  default: unknown
  /** What is accepted. */
  expected: string
  /** What it does. */
  doc: string
  /** For an enum: the names accepted. */
  values?: string[]
  /** The least value accepted. */
  min?: number
  /** The largest value accepted. */
  max?: number
}
/** What a reclaim gave back. */
export interface ReclaimCounts {
  /** Permits of dead processes given back (as \`cancelled\`). */
  permits: number
  /** Records of processes that died while asking. */
  claims: number
}
/** The kind and capacity of a region's guard. */
export interface RegionGuardKind {
  /** The kind (\`'circuit_breaker'\`, \`'bulkhead'\`, ...). */
  kind: string
  /** Its capacity (window cells, keys, ...). */
  capacity: number
}
/** A guard of a region. */
export interface RegionGuardInfo {
  /** Its name. */
  name: string
  /** Its kind. */
  kind: string
  /** Its capacity. */
  capacity: number
  /** Bytes it takes in the region. */
  size: number
}
/** Settings of a fleet member (\`Fleet.join\`; docs/fleet.md). Durations in ms. */
export interface FleetOptions {
  /** \`redis://[user:password@]host:port[/db]\` (or \`valkey://\`). */
  url: string
  /** The fleet's name: members of one service share its allowances. 1..=128 characters of [A-Za-z0-9._-]. */
  service: string
  /** This member's name, unique in the fleet (host name, pod name). Same rules. */
  member: string
  /** How often the agent syncs. Default 250 ms; 10..=60000. */
  syncIntervalMs?: number
  /** How long this member's record lives without a heartbeat. Default 3 × syncIntervalMs; at least 2 × syncIntervalMs, at most 600000. */
  ttlMs?: number
  /** How long the last shares are kept while Redis is unreachable, before falling back. Default 2 × syncIntervalMs; less than ttlMs. */
  staleAfterMs?: number
  /** The share to fall back to after staleAfterMs (never above the last share). Default: the allowance ÷ the last known members; 0: strict. */
  fallbackFloor?: number | null
  /** The timeout of each Redis call. Default syncIntervalMs; 1..=60000. */
  ioTimeoutMs?: number
  /** This member's relative size. Default 1; 1..=1000. */
  weight?: number
}
/** Something a fleet's agent saw or did (\`Fleet.events()\`). */
export type FleetEvent =
  | {
      /** An attached guard's share (its cap) changed. */
      kind: 'shareChanged'
      /** The allowance. */
      allowance: string
      /** The share before. */
      from: number
      /** The share now. */
      to: number
    }
  | {
      /** A member appeared in the fleet, or left it (it left, or its record expired). */
      kind: 'memberJoined' | 'memberLeft'
      /** Its name. */
      member: string
    }
  | {
      /** A sync failed after the last one succeeded. */
      kind: 'redisLost'
      /** Why. */
      error: string
    }
  | {
      /** A sync succeeded after failures. */
      kind: 'redisRegained'
    }
  | {
      /** Redis was unreachable for staleAfterMs: the guard fell back to this share. */
      kind: 'fellBack'
      /** The allowance. */
      allowance: string
      /** The fallback share. */
      share: number
    }
  | {
      /** An attached breaker with too few calls of its own opened on the fleet's evidence. */
      kind: 'breakerOpenedOnFleetEvidence'
      /** The breaker's name (as given to \`attachBreaker\`). */
      name: string
      /** Calls in the fleet's windows (this member's included). */
      fleetCalls: number
      /** Failures among them. */
      fleetFailures: number
      /** Other members that contributed calls. */
      members: number
    }
`;

for (const [iface, name, extra] of configs) {
  const fields = n.configSchema(name);
  const t = build(fields);
  out += `/** Options of \`${name}\` (durations in ms, or exact ns as a bigint). */\nexport interface ${iface} {\n`;
  for (const f of t.leaves) out += doc(f, '  ') + `  ${f.name}?: ${tsType(f)}\n`;
  for (const [k, sub] of t.objects) {
    out += `  /** Nested options. */\n  ${k}?: {\n`;
    for (const f of sub) out += doc(f, '    ') + `    ${f.name}?: ${tsType(f)}\n`;
    out += '  }\n';
  }
  for (const [k, a] of t.arrays) {
    if (a.leaf) {
      out += doc({ ...a.leaf, doc: `${a.leaf.doc} (one per priority, most important first)` }, '  ');
      out += `  ${k}?: number[]\n`;
    } else {
      out += `  /** One per priority, most important first. */\n  ${k}?: Array<{\n`;
      for (const f of a.item.values()) out += doc(f, '    ') + `    ${f.name.replace(/^.*\./, '')}?: ${tsType(f)}\n`;
      out += '  }>\n';
    }
  }
  out += extra + '}\n';
}
const native = fs.readFileSync(process.argv[2], 'utf8')
  .replace(/^\/\* auto-generated by NAPI-RS \*\/\n\/\* eslint-disable \*\/\n/, '');
const head = '/* Generated by node/scripts/gen-dts.js from the addon (napi-rs type definitions and the\n' +
  ' * config schemas of guards-ffi). Do not edit: run `make node`. */\n/* eslint-disable */\n\n';
fs.writeFileSync(path.join(__dirname, '..', 'index.d.ts'), head + out + '\n' + native);
