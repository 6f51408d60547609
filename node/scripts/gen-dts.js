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
  | { kind: 'attempt'; number: number; budgetMs: number; expiresAt: bigint; attempts: number }
  | { kind: 'wait'; retryAfterMs: number; retryAt: bigint; attempts: number }
  | { kind: 'succeeded'; attempts: number }
  | { kind: 'give_up'; reason: GiveUpReason; overloaded: boolean; attempts: number }
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
  state: 'closed' | 'open' | 'half_open'
  generation: number
  probesIssued: number
  probesPassed: number
  consecutiveOpens: number
  halfOpenAt: bigint
}
export interface CircuitBreakerStats {
  successes: number; failures: number; slowCalls: number; probesAdmitted: number
  probeSuccesses: number; probeFailures: number; ignored: number; discarded: number
  rejectedOpen: number; rejectedHalfOpen: number; closedToOpen: number
  openToHalfOpen: number; halfOpenToClosed: number; halfOpenToOpen: number
  state: 'closed' | 'open' | 'half_open'
}
export interface BulkheadStats { acquired: number; rejected: number; released: number; inFlight: number; maxConcurrent: number }
export interface LimiterStats {
  acquired: number; rejected: number; rejectedLimitReached: number; rejectedPartitionCap: number
  rejectedReserved: number; succeeded: number; dropped: number; ignored: number; windows: number
  limitChanges: number; foldsSkipped: number; limit: number; inFlight: number; rejectedByPriority: number[]
}
export interface AdmissionStats {
  admitted: number; refusedLimitReached: number; refusedOverloaded: number; succeeded: number
  dropped: number; ignored: number; inFlight: number; limit?: number; refusedByPriority: number[]
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
  guards: number; maxGuards: number; dataUsed: number; dataBytes: number; permitSlots: number
  permitsHeld: number; reclaimedPermits: number; reclaimedClaims: number; scans: number; takeovers: number
}
export interface RetryBudgetStats { deposits: number; withdrawals: number; refusals: number; refunds: number; failures: number; tokens: number }
/** A limit algorithm and its options. */
export type LimitOptions =
  | ({ algorithm: 'aimd' } & AimdOptions)
  | ({ algorithm: 'vegas' } & VegasOptions)
  | ({ algorithm: 'gradient' } & GradientOptions)
/** Options of a RetryBudget: a mode and that mode's options. */
export type RetryBudgetOptions =
  | ({ mode?: 'token_bucket' } & TokenBudgetOptions)
  | ({ mode: 'grpc' } & GrpcThrottleOptions)
  | ({ mode: 'aws' } & AwsRetryQuotaOptions)
  | ({ mode: 'windowed' } & WindowedBudgetOptions)
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
