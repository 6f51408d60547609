/*
 * Types of the npm package `guards` (what `require('guards')` returns): the native classes
 * and functions (../index.d.ts, generated from the addon and the config schemas) and what
 * the JavaScript layer (lib/) adds: `execute`, events and sharing on the guards, `retry`,
 * `guarded`, `createFetch`, the admission middlewares, the errors, `prometheusCollector`.
 * Written by hand; test/typescript.test.js type-checks a program against it.
 */
/* eslint-disable */

import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as native from '../index';
import type {
  Outcome, Idempotency, GiveUpReason, RefusalKind, RetryStep, RetryGateFunction,
  CircuitBreakerOptions, KeyedBreakersOptions, BulkheadOptions, LimiterOptions, AdmissionOptions,
  RetryBudgetOptions, RetryPolicyOptions, HedgingOptions, LatencyTrackerOptions,
  AdaptiveThrottleOptions, BrownoutOptions, BackoffOptions, RegionOptions,
} from '../index';

export type {
  Outcome, Idempotency, GiveUpReason, RefusalKind, RetryStep, RetryGateFunction, DecideOptions,
  RetryDriverOptions, BreakerStatus, CircuitBreakerStats, BulkheadStats, LimiterStats,
  AdmissionStats, RetryBudgetStats, LimitOptions, CircuitBreakerOptions, KeyedBreakersOptions,
  BulkheadOptions, DeadlineOptions, BackoffOptions, RetryPolicyOptions, RetryBudgetOptions,
  TokenBudgetOptions, GrpcThrottleOptions, AwsRetryQuotaOptions, WindowedBudgetOptions,
  LatencyTrackerOptions, HedgingOptions, AdaptiveThrottleOptions, BrownoutOptions,
  QueueDisciplineOptions, AimdOptions, VegasOptions, GradientOptions, LimiterOptions,
  AdmissionOptions, RegionOptions, RegionStats,
} from '../index';

export {
  BrownoutTable, Deadline, QueueDiscipline, Limit, RetryDriver, RetryReceipt, CircuitBreakerPermit,
  KeyedBreakersPermit, BulkheadPermit, LimiterPermit, AdmissionPermit, nowNs, outcomeVerdicts,
  classifyHttp, parseRetryAfter, parseHttpDate, outcomeOfStatus, formatHttpDate,
  encodeGrpcTimeout, parseGrpcTimeout, encodeMillis, parseMillis, stableOffsetMs, nextStableRun,
  configSchema, RegionPermit,
} from '../index';

/** A region budget's receipt: a `RetryReceipt` (the same class). */
export { RetryReceipt as RegionRetryReceipt } from '../index';

/** A breaker's state. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * How to classify an error (or, for `classifyResult`, a value): an outcome name, an outcome
 * with the server's Retry-After, or `undefined` for the default (`classifyError`).
 */
export type Classification = Outcome | { outcome: Outcome; retryAfterMs?: number | null } | null | undefined;

/** Options of a guard's `execute`. */
export interface ExecuteOptions {
  /** Classify an error `fn` threw (default `classifyError`). */
  classify?: (err: unknown) => Classification;
}

/** Options of `Limiter.execute`. */
export interface LimiterExecuteOptions extends ExecuteOptions {
  /** 0 (the most important) ..= 7. Default 0. */
  priority?: number;
}

/** Listeners of a guard's events (an `EventEmitter` made on first use). */
interface Events<M extends Record<string, unknown>> {
  /** The guard's emitter. */
  readonly events: EventEmitter;
  /** Listen to `event`. */
  on<E extends keyof M & string>(event: E, listener: (e: M[E]) => void): this;
  /** Listen once. */
  once<E extends keyof M & string>(event: E, listener: (e: M[E]) => void): this;
  /** Stop listening. */
  off<E extends keyof M & string>(event: E, listener: (e: M[E]) => void): this;
}

/** A breaker changed state (heard on every thread that shares the breaker). */
export interface BreakerStateChange { from: BreakerState; to: BreakerState; breaker: CircuitBreaker }
/** A key's breaker changed state; `key` is `null` when the change was made by another
 * thread for a key this thread has not named. */
export interface KeyedStateChange { key: string | null; keyId: bigint; to: BreakerState; breakers: KeyedBreakers }
/** A limiter's limit moved. */
export interface LimitChange { from: number; to: number; limiter: Limiter }
/** An admission door's adaptive limit moved (`null`: no adaptive limit). */
export interface AdmissionLimitChange { from: number | null; to: number | null; admission: Admission }

/** A circuit breaker with `execute`, events and sharing between worker threads. */
export declare class CircuitBreaker extends native.CircuitBreaker implements Events<{ stateChange: BreakerStateChange }> {
  /** A breaker built in a new SharedArrayBuffer (`sharedMemory`): post it to workers. */
  static shared(options?: CircuitBreakerOptions): CircuitBreaker;
  /** The breaker another thread built in `buffer`. */
  static fromShared(buffer: SharedArrayBuffer): CircuitBreaker;
  /** The SharedArrayBuffer it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
  /**
   * Run `fn` through the breaker: a refusal rejects with `BreakerOpenError` without
   * calling it; its result or error is reported.
   */
  execute<T>(fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  readonly events: EventEmitter;
  on(event: 'stateChange', listener: (e: BreakerStateChange) => void): this;
  once(event: 'stateChange', listener: (e: BreakerStateChange) => void): this;
  off(event: 'stateChange', listener: (e: BreakerStateChange) => void): this;
}

/** One circuit breaker per key, with `execute`, events and sharing. */
export declare class KeyedBreakers extends native.KeyedBreakers implements Events<{ stateChange: KeyedStateChange }> {
  static shared(options?: KeyedBreakersOptions): KeyedBreakers;
  static fromShared(buffer: SharedArrayBuffer): KeyedBreakers;
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** Run `fn` through the breaker of `key` (see `CircuitBreaker.execute`). */
  execute<T>(key: string, fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  readonly events: EventEmitter;
  on(event: 'stateChange', listener: (e: KeyedStateChange) => void): this;
  once(event: 'stateChange', listener: (e: KeyedStateChange) => void): this;
  off(event: 'stateChange', listener: (e: KeyedStateChange) => void): this;
}

/** A bulkhead with `execute` and sharing. */
export declare class Bulkhead extends native.Bulkhead {
  static shared(options?: BulkheadOptions): Bulkhead;
  static fromShared(buffer: SharedArrayBuffer): Bulkhead;
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** Run `fn` holding a slot; `BulkheadFullError` at the cap, without calling it. */
  execute<T>(fn: () => T | PromiseLike<T>): Promise<Awaited<T>>;
}

/** A concurrency limiter with `execute`, events and sharing. */
export declare class Limiter extends native.Limiter implements Events<{ limitChange: LimitChange }> {
  static shared(options?: LimiterOptions): Limiter;
  static fromShared(buffer: SharedArrayBuffer): Limiter;
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** Run `fn` under the limit; `LimitExceededError` when refused. */
  execute<T>(fn: () => T | PromiseLike<T>, options?: LimiterExecuteOptions): Promise<Awaited<T>>;
  readonly events: EventEmitter;
  on(event: 'limitChange', listener: (e: LimitChange) => void): this;
  once(event: 'limitChange', listener: (e: LimitChange) => void): this;
  off(event: 'limitChange', listener: (e: LimitChange) => void): this;
}

/** Admission control with events and sharing (use it through the middlewares). */
export declare class Admission extends native.Admission implements Events<{ limitChange: AdmissionLimitChange }> {
  static shared(options?: AdmissionOptions): Admission;
  static fromShared(buffer: SharedArrayBuffer): Admission;
  get sharedMemory(): SharedArrayBuffer | undefined;
  readonly events: EventEmitter;
  on(event: 'limitChange', listener: (e: AdmissionLimitChange) => void): this;
  once(event: 'limitChange', listener: (e: AdmissionLimitChange) => void): this;
  off(event: 'limitChange', listener: (e: AdmissionLimitChange) => void): this;
}

export declare class RetryBudget extends native.RetryBudget {
  static shared(options?: RetryBudgetOptions): RetryBudget;
  static fromShared(buffer: SharedArrayBuffer): RetryBudget;
  get sharedMemory(): SharedArrayBuffer | undefined;
}
export declare class RetryPolicy extends native.RetryPolicy {
  static shared(options?: RetryPolicyOptions): RetryPolicy;
  static fromShared(buffer: SharedArrayBuffer): RetryPolicy;
  get sharedMemory(): SharedArrayBuffer | undefined;
}
export declare class Hedging extends native.Hedging {
  static shared(options?: HedgingOptions): Hedging;
  static fromShared(buffer: SharedArrayBuffer): Hedging;
  get sharedMemory(): SharedArrayBuffer | undefined;
}
export declare class LatencyTracker extends native.LatencyTracker {
  static shared(options?: LatencyTrackerOptions): LatencyTracker;
  static fromShared(buffer: SharedArrayBuffer): LatencyTracker;
  get sharedMemory(): SharedArrayBuffer | undefined;
}
export declare class AdaptiveThrottle extends native.AdaptiveThrottle {
  static shared(options?: AdaptiveThrottleOptions): AdaptiveThrottle;
  static fromShared(buffer: SharedArrayBuffer): AdaptiveThrottle;
  get sharedMemory(): SharedArrayBuffer | undefined;
}
export declare class Brownout extends native.Brownout {
  static shared(options?: BrownoutOptions): Brownout;
  static fromShared(buffer: SharedArrayBuffer): Brownout;
  get sharedMemory(): SharedArrayBuffer | undefined;
}
export declare class Backoff extends native.Backoff {
  static shared(options?: BackoffOptions & { seed?: number | bigint }): Backoff;
  static fromShared(buffer: SharedArrayBuffer): Backoff;
  get sharedMemory(): SharedArrayBuffer | undefined;
}

// ---------------------------------------------------------------------------------------
// host-wide guards (a region file shared by processes)

/** Options of a `Region`: the native ones and `pollInterval`. */
export interface RegionLayerOptions extends RegionOptions {
  /** Milliseconds between two looks at a guard for changes made by other processes (events). Default 100; 1..=3600000. */
  pollInterval?: number;
}

/** A breaker in a region changed state (this process's calls, or another process's seen by polling). */
export interface RegionBreakerStateChange { from: BreakerState; to: BreakerState; breaker: RegionCircuitBreaker }
/** A region limiter's limit moved. */
export interface RegionLimitChange { from: number; to: number; limiter: RegionLimiter }

/**
 * A region of host-wide guards: a file mapped by every process that opens it (a bare name
 * means `/dev/shm/<name>`). Every process asking for a name gets the same guard.
 */
export declare class Region extends native.Region {
  constructor(path: string, options?: RegionLayerOptions);
  /** The same as `new Region(path, options)`. */
  static open(path: string, options?: RegionLayerOptions): Region;
  /** Milliseconds between two looks at a guard for other processes' changes. */
  get pollInterval(): number;
  /** The breaker named `name`, created with `options` if there is none (else they must match). */
  circuitBreaker(name: string, options?: CircuitBreakerOptions): RegionCircuitBreaker;
  /** The keyed breaker set named `name`, created with `options` if there is none. */
  keyedBreakers(name: string, options?: KeyedBreakersOptions): RegionKeyedBreakers;
  /** The bulkhead named `name`, created with `options` if there is none. */
  bulkhead(name: string, options?: BulkheadOptions): RegionBulkhead;
  /** The limiter named `name`, created with `options` if there is none. */
  limiter(name: string, options?: LimiterOptions): RegionLimiter;
  /** The admission door named `name`, created with `options` if there is none. */
  admission(name: string, options?: AdmissionOptions): RegionAdmission;
  /** The retry budget named `name`, created with `options` if there is none: a `RetryBudget` (for `retry`, `createFetch`, `RetryDriver`, gates). */
  retryBudget(name: string, options?: RetryBudgetOptions): RegionRetryBudget;
  /** The hedging policy named `name`, created with `options` if there is none: a `Hedging`. */
  hedging(name: string, options?: HedgingOptions): RegionHedging;
  /** The latency tracker named `name`, created with `options` if there is none: a `LatencyTracker`. */
  latencyTracker(name: string, options?: LatencyTrackerOptions): RegionLatencyTracker;
  /** The adaptive throttle named `name`, created with `options` if there is none: an `AdaptiveThrottle`. */
  adaptiveThrottle(name: string, options?: AdaptiveThrottleOptions): RegionAdaptiveThrottle;
  /** The brownout (one operation) named `name`, created with `options` if there is none: a `Brownout`. */
  brownout(name: string, options?: BrownoutOptions): RegionBrownout;
  /** The existing guard named `name`, whatever its config, as the class of its kind. */
  attach(name: string): RegionCircuitBreaker | RegionKeyedBreakers | RegionBulkhead | RegionLimiter | RegionAdmission
    | RegionRetryBudget | RegionHedging | RegionLatencyTracker | RegionAdaptiveThrottle | RegionBrownout;
}

/** A circuit breaker in a region, with `execute` and events (see `CircuitBreaker`). */
export declare class RegionCircuitBreaker extends native.RegionCircuitBreaker implements Events<{ stateChange: RegionBreakerStateChange }> {
  constructor(region: Region, name: string, options?: CircuitBreakerOptions, attach?: boolean);
  get region(): Region;
  execute<T>(fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  readonly events: EventEmitter;
  on(event: 'stateChange', listener: (e: RegionBreakerStateChange) => void): this;
  once(event: 'stateChange', listener: (e: RegionBreakerStateChange) => void): this;
  off(event: 'stateChange', listener: (e: RegionBreakerStateChange) => void): this;
}

/** A key's breaker in a region changed state (`key` is `null` for a key this process has not named). */
export interface RegionKeyedStateChange { key: string | null; keyId: bigint; to: BreakerState; breakers: RegionKeyedBreakers }

/** One breaker per key in a region, with `execute` and events (see `KeyedBreakers`); `createFetch` takes it. */
export declare class RegionKeyedBreakers extends native.RegionKeyedBreakers implements Events<{ stateChange: RegionKeyedStateChange }> {
  constructor(region: Region, name: string, options?: KeyedBreakersOptions, attach?: boolean);
  get region(): Region;
  execute<T>(key: string, fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  readonly events: EventEmitter;
  on(event: 'stateChange', listener: (e: RegionKeyedStateChange) => void): this;
  once(event: 'stateChange', listener: (e: RegionKeyedStateChange) => void): this;
  off(event: 'stateChange', listener: (e: RegionKeyedStateChange) => void): this;
}

/** A bulkhead in a region, with `execute` (see `Bulkhead`). */
export declare class RegionBulkhead extends native.RegionBulkhead {
  constructor(region: Region, name: string, options?: BulkheadOptions, attach?: boolean);
  get region(): Region;
  execute<T>(fn: () => T | PromiseLike<T>): Promise<Awaited<T>>;
}

/** A limiter in a region, with `execute` and events (see `Limiter`). */
export declare class RegionLimiter extends native.RegionLimiter implements Events<{ limitChange: RegionLimitChange }> {
  constructor(region: Region, name: string, options?: LimiterOptions, attach?: boolean);
  get region(): Region;
  execute<T>(fn: () => T | PromiseLike<T>, options?: LimiterExecuteOptions): Promise<Awaited<T>>;
  readonly events: EventEmitter;
  on(event: 'limitChange', listener: (e: RegionLimitChange) => void): this;
  once(event: 'limitChange', listener: (e: RegionLimitChange) => void): this;
  off(event: 'limitChange', listener: (e: RegionLimitChange) => void): this;
}

/** A region door's adaptive limit moved (`null`: no adaptive limit). */
export interface RegionAdmissionLimitChange { from: number | null; to: number | null; admission: RegionAdmission }

/** Admission control in a region, with events (see `Admission`); the middlewares take it. */
export declare class RegionAdmission extends native.RegionAdmission implements Events<{ limitChange: RegionAdmissionLimitChange }> {
  constructor(region: Region, name: string, options?: AdmissionOptions, attach?: boolean);
  get region(): Region;
  readonly events: EventEmitter;
  on(event: 'limitChange', listener: (e: RegionAdmissionLimitChange) => void): this;
  once(event: 'limitChange', listener: (e: RegionAdmissionLimitChange) => void): this;
  off(event: 'limitChange', listener: (e: RegionAdmissionLimitChange) => void): this;
}

/**
 * A retry budget in a region: a `RetryBudget` whose balance and counters are every
 * process's (so `retry({ budget })`, `createFetch({ budget })`, `RetryDriver` and the gates
 * take it). Not placeable in a buffer: `shared` / `fromShared` throw.
 */
export declare class RegionRetryBudget extends RetryBudget {
  constructor(region: Region, name: string, options?: RetryBudgetOptions, attach?: boolean);
  get region(): Region;
  get name(): string;
  static shared(options?: unknown): never;
  static fromShared(buffer: unknown): never;
  /** This budget as a retry gate function (each `true` has withdrawn a retry's cost). */
  gate(): RetryGateFunction;
}

/** A hedging policy in a region: a `Hedging` whose latency samples and counters are every process's. */
export declare class RegionHedging extends Hedging {
  constructor(region: Region, name: string, options?: HedgingOptions, attach?: boolean);
  get region(): Region;
  get name(): string;
  static shared(options?: unknown): never;
  static fromShared(buffer: unknown): never;
}

/** A latency tracker in a region: a `LatencyTracker` fed by every process. */
export declare class RegionLatencyTracker extends LatencyTracker {
  constructor(region: Region, name: string, options?: LatencyTrackerOptions, attach?: boolean);
  get region(): Region;
  get name(): string;
  static shared(options?: unknown): never;
  static fromShared(buffer: unknown): never;
}

/** An adaptive throttle in a region: an `AdaptiveThrottle` counting every process's requests and accepts. */
export declare class RegionAdaptiveThrottle extends AdaptiveThrottle {
  constructor(region: Region, name: string, options?: AdaptiveThrottleOptions, attach?: boolean);
  get region(): Region;
  get name(): string;
  static shared(options?: unknown): never;
  static fromShared(buffer: unknown): never;
}

/** A brownout (one operation) in a region: a `Brownout` whose counters are every process's. */
export declare class RegionBrownout extends Brownout {
  constructor(region: Region, name: string, options?: BrownoutOptions, attach?: boolean);
  get region(): Region;
  get name(): string;
  static shared(options?: unknown): never;
  static fromShared(buffer: unknown): never;
}

// ---------------------------------------------------------------------------------------
// retry

/** What each attempt is given. */
export interface AttemptInfo {
  /** Aborted when the attempt outlives its budget (or the caller's signal aborts);
   * `undefined` when neither can happen. */
  signal: AbortSignal | undefined;
  /** 1 for the first attempt. */
  attempt: number;
  /** The attempt's budget in ms: `min(attemptTimeoutMs, time left) − marginMs`. */
  budgetMs: number;
}

/** Options of `retry` / `new Retry`: the policy's (or `policy`), and the loop's. */
export interface RetryOptions extends RetryPolicyOptions {
  /** A built policy (instead of the policy's options). */
  policy?: native.RetryPolicy;
  /** The budget that pays for retries. */
  budget?: native.RetryBudget;
  /** The whole call's time limit, in ms (or exact ns as a bigint). */
  timeoutMs?: number | bigint;
  /** The whole call's deadline, an instant (bigint ns on the monotonic clock). */
  deadline?: bigint;
  /** Each attempt's longest wait, in ms (or exact ns as a bigint). */
  attemptTimeoutMs?: number | bigint;
  /** Kept back from the time left, in ms (or exact ns as a bigint). */
  marginMs?: number | bigint;
  /** Default 'idempotent'. */
  idempotency?: Idempotency;
  /** Classify an error an attempt threw (default `classifyError`). */
  classify?: (err: unknown) => Classification;
  /** Classify a value an attempt returned (retry on a value: an HTTP 503, say). */
  classifyResult?: (value: any) => { outcome: Outcome; retryAfterMs?: number | null } | null | undefined;
  /** Called before each wait (as the `retry` event). */
  onRetry?: (info: RetryInfo) => void;
  /** A name, for your own records. */
  name?: string;
}

/** Per call: the caller's signal, and a narrower deadline or time limit. */
export interface RetryCallOptions {
  signal?: AbortSignal;
  deadline?: bigint;
  timeoutMs?: number | bigint;
}

/** The `retry` event: attempt `attempt` ended with `outcome`, retry in `delayMs`. */
export interface RetryInfo { attempt: number; outcome: Outcome; error: unknown; value: unknown; delayMs: number; retry: Retry }
/** The `giveUp` event. */
export interface GiveUpInfo { reason: GiveUpReason; attempts: number; error: unknown; outcome: Outcome; retry: Retry }

/** Counters of a plan's calls. */
export interface RetryStats {
  calls: number; attempts: number; retries: number; successes: number; failures: number;
  attemptTimeouts: number; cancelled: number; policy: Record<string, number>;
}

/** A retry plan, built once and shared (on core's retry driver). */
export declare class Retry extends EventEmitter {
  constructor(options?: RetryOptions);
  readonly policy: native.RetryPolicy;
  readonly budget: native.RetryBudget | undefined;
  stats(): RetryStats;
  /** Run `fn` with retries. */
  execute<T>(fn: (attempt: AttemptInfo) => T | PromiseLike<T>, options?: RetryCallOptions): Promise<Awaited<T>>;
  on(event: 'retry', listener: (e: RetryInfo) => void): this;
  on(event: 'giveUp', listener: (e: GiveUpInfo) => void): this;
  once(event: 'retry', listener: (e: RetryInfo) => void): this;
  once(event: 'giveUp', listener: (e: GiveUpInfo) => void): this;
}

/** Run `fn` with retries (a one-off `Retry`). */
export declare function retry<T>(
  fn: (attempt: AttemptInfo) => T | PromiseLike<T>,
  options?: RetryOptions & { signal?: AbortSignal },
): Promise<Awaited<T>>;

// ---------------------------------------------------------------------------------------
// guarded

/** A guard `guarded` takes. */
export type Guard = native.CircuitBreaker | native.KeyedBreakers | native.Bulkhead | native.Limiter | native.Admission | native.AdaptiveThrottle
  | RegionCircuitBreaker | RegionKeyedBreakers | RegionBulkhead | RegionLimiter;

/** A fallback: a value, or a function of the error. */
export type Fallback<F> = ((err: unknown) => F | PromiseLike<F>) | Exclude<F, Function>;

/** Options of `guarded`. */
export interface GuardedOptions<F = never> {
  /** Served for refusals and dependency failures (never for your own errors). */
  fallback?: Fallback<F>;
  /** Which kinds get the fallback (default: an optional operation, every kind). */
  brownout?: native.Brownout;
  /** Retries around the guards: a `Retry`, or its options. */
  retry?: Retry | RetryOptions;
  /** Each try's time limit, in ms. */
  timeoutMs?: number;
  /** The priority for a `Limiter` or `Admission` (0..=7). */
  priority?: number;
  /** The key for a `KeyedBreakers`. */
  key?: string;
  /** Classify an error `fn` threw. */
  classify?: (err: unknown) => Classification;
  name?: string;
}

/** The `fallback` event. */
export interface FallbackInfo { served: boolean; kind: RefusalKind | null; error: unknown }

/** A call stack of guards. */
export declare class Guarded<F = never> extends EventEmitter {
  constructor(guards: readonly Guard[], options?: GuardedOptions<F>);
  stats(): { calls: number; full: number; fallbacks: number; errors: number; brownout?: { full: number; degraded: number; errors: number; proceeded: number } };
  /** Run `fn` through the stack. */
  execute<T>(fn: (attempt: AttemptInfo) => T | PromiseLike<T>, options?: RetryCallOptions): Promise<Awaited<T> | F>;
  /** `fn` wrapped: the same arguments, run through the stack. */
  wrap<A extends unknown[], T>(fn: (...args: A) => T | PromiseLike<T>): (...args: A) => Promise<Awaited<T> | F>;
  on(event: 'fallback', listener: (e: FallbackInfo) => void): this;
  once(event: 'fallback', listener: (e: FallbackInfo) => void): this;
}

/** A call stack of guards (see `Guarded`). */
export declare function guarded<F = never>(guards: readonly Guard[], options?: GuardedOptions<F>): Guarded<F>;

// ---------------------------------------------------------------------------------------
// fetch

/** Options of `createFetch`. */
export interface FetchOptions extends Omit<RetryOptions, 'policy' | 'budget' | 'classifyResult' | 'onRetry' | 'idempotency'> {
  /** The underlying fetch (default `globalThis.fetch`). */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** A breaker per `scheme://host:port` (default: one set per client; `null`: none). */
  breakers?: native.KeyedBreakers | native.RegionKeyedBreakers | null;
  /** The deadline header sent: `grpc-timeout` (default), milliseconds, or none. */
  deadlineHeader?: 'grpc' | 'millis' | null;
  /** The budget that pays for retries (default: one per client; `null`: none). */
  budget?: native.RetryBudget | null;
}

/** `fetch`'s init, and this call's time limit. */
export type GuardedRequestInit = RequestInit & {
  /** This call's time limit in ms (retries and waits included), narrowing the client's. */
  timeoutMs?: number;
};

/** A guarded `fetch`. */
export interface GuardedFetch {
  (input: string | URL | Request, init?: GuardedRequestInit): Promise<Response>;
  readonly breakers: native.KeyedBreakers | null;
  readonly budget: native.RetryBudget | undefined;
  stats(): { idempotent: RetryStats; keyed: RetryStats; unkeyed: RetryStats };
}

/** A `fetch` with a deadline header, per-attempt timeouts, retries and a breaker per host. */
export declare function createFetch(options?: FetchOptions): GuardedFetch;

// ---------------------------------------------------------------------------------------
// admission middleware

/** Options of the admission middlewares. */
export interface AdmissionMiddlewareOptions {
  /** A request's priority: a function of it, a header name read by `priorityFromHeader`,
   * or a number. Default 1. */
  priority?: number | string | ((req: IncomingMessage) => number);
  /** Paths let in without a slot (default the health paths). */
  exempt?: Iterable<string>;
  /** Called for each request refused with 503. */
  onReject?: (req: IncomingMessage) => void;
}

/** Counters of a middleware. */
export interface AdmissionMiddlewareStats {
  requests: number; exempt: number; admitted: number; rejected: number; overloaded: number;
  disconnected: number; errors: number;
}

/** A node:http handler behind the door. */
export declare function httpAdmission(
  admission: native.Admission | native.RegionAdmission,
  handler: (req: IncomingMessage, res: ServerResponse) => unknown,
  options?: AdmissionMiddlewareOptions,
): ((req: IncomingMessage, res: ServerResponse) => void) & { stats(): AdmissionMiddlewareStats };

/** Express middleware: `app.use(expressAdmission(door))`. */
export declare function expressAdmission(
  admission: native.Admission | native.RegionAdmission,
  options?: AdmissionMiddlewareOptions,
): ((req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void) & { stats(): AdmissionMiddlewareStats };

/** A Fastify `onRequest` hook: `fastify.addHook('onRequest', fastifyAdmission(door))`. */
export declare function fastifyAdmission(
  admission: native.Admission | native.RegionAdmission,
  options?: AdmissionMiddlewareOptions,
): ((request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): unknown }, done: (err?: Error) => void) => void) & { stats(): AdmissionMiddlewareStats };

/** A priority function reading header `name`: a number 0..7 or a name (`critical`, ...). */
export declare function priorityFromHeader(name?: string, fallback?: number): (req: IncomingMessage) => number;

// ---------------------------------------------------------------------------------------
// metrics, outcomes

/** Register every numeric stat of `guards` (name → anything with `stats()`) as
 * `guards_<stat>` on a prom-client registry. */
export declare function prometheusCollector(
  guards: Record<string, { stats(): object }>,
  options?: { registry?: unknown; prefix?: string },
): { metrics: string[] };

/** The outcome (and Retry-After) of an error thrown by a call. */
export declare function classifyError(err: unknown): { outcome: Outcome; retryAfterMs: number | null };

/** The outcomes, by number. */
export declare const OUTCOMES: readonly Outcome[];

/** The addon's version. */
export declare const version: string;

// ---------------------------------------------------------------------------------------
// errors

/** A bad option or argument: a `TypeError` (wrong type, unknown name) or `RangeError`. */
export interface InvalidOptionError extends Error {
  code: 'GUARDS_INVALID_OPTION';
  /** The option or argument, as you spelled it. */
  option: string;
  /** For a refused config value: `not_finite`, `negative`, `zero`, `out_of_range`,
   * `inconsistent`. */
  kind?: string;
  /** For a malformed header value: the fault. */
  reason?: string;
}

/** Base class of every error guards throws, except bad options. */
export declare class GuardsError extends Error {
  code: string;
}
/** A guard refused the call before it was made. */
export declare class RejectedError extends GuardsError {
  /** Why (the guard's reason name). */
  reason?: string;
  /** When to try again (bigint ns on the monotonic clock), if the guard knows. */
  retryAt?: bigint;
  retryAfterMs?: number;
}
export declare class BreakerOpenError extends RejectedError { code: 'GUARDS_BREAKER_OPEN' | 'GUARDS_BREAKER_HALF_OPEN_FULL' }
export declare class BreakersFullError extends RejectedError { code: 'GUARDS_BREAKERS_FULL' }
export declare class BulkheadFullError extends RejectedError { code: 'GUARDS_BULKHEAD_FULL'; inFlight: number; maxConcurrent: number }
export declare class LimitExceededError extends RejectedError { code: 'GUARDS_LIMIT_EXCEEDED'; priority: number; inFlight: number; threshold: number }
export declare class AdmissionRejectedError extends RejectedError { code: 'GUARDS_ADMISSION_REJECTED'; retryAfterSecs: number; priority: number; inFlight: number; threshold: number }
export declare class QueueFullError extends RejectedError { code: 'GUARDS_QUEUE_FULL'; capacity: number }
export declare class ThrottledError extends RejectedError { code: 'GUARDS_THROTTLED' }
export declare class BudgetExhaustedError extends RejectedError { code: 'GUARDS_BUDGET_EXHAUSTED'; attempts: number }
export declare class RetriesExhaustedError extends RejectedError { code: 'GUARDS_RETRIES_EXHAUSTED'; attempts: number }
export declare class DeadlineExceededError extends RejectedError { code: 'GUARDS_DEADLINE_EXCEEDED'; attempts: number }
/** One attempt outlived its budget and was abandoned. */
export declare class AttemptTimeoutError extends GuardsError { code: 'GUARDS_ATTEMPT_TIMEOUT' }
/** A permit (or receipt) reported twice, or to another guard. */
export declare class PermitError extends GuardsError { code: 'GUARDS_PERMIT_ALREADY_REPORTED' | 'GUARDS_PERMIT_WRONG_GUARD' | 'GUARDS_PERMIT_UNKNOWN' }
/** A RetryDriver call in the wrong phase (nothing changed). */
export declare class RetryDriverError extends GuardsError { code: 'GUARDS_RETRY_DRIVER_PHASE'; call: string; phase: string }
/** A bug in guards. */
export declare class InternalError extends GuardsError { code: 'GUARDS_INTERNAL' }
/** A shared region refused (`errno` for GUARDS_REGION_IO). */
export declare class RegionError extends GuardsError {
  code: 'GUARDS_REGION_IO' | 'GUARDS_REGION_INVALID' | 'GUARDS_REGION_INCOMPATIBLE' | 'GUARDS_REGION_FULL'
    | 'GUARDS_REGION_TIMEOUT' | 'GUARDS_GUARD_MISMATCH' | 'GUARDS_GUARD_NOT_FOUND' | 'GUARDS_PERMIT_SLOTS_EXHAUSTED';
  errno?: number;
}
/** A guard of that name exists with another kind, capacity or config. */
export declare class GuardMismatchError extends RegionError {
  code: 'GUARDS_GUARD_MISMATCH';
  /** What differs. */
  field: 'kind' | 'capacity' | 'config';
  existing: number;
  requested: number;
  /**
   * For a config mismatch: each option whose value differs, with the region's value and
   * the one asked for, as the options spell them (durations in ms, names).
   */
  differences?: Record<string, { existing: unknown; requested: unknown }>;
}
