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
  AdmissionOptions, RegionOptions, RegionStats, WindowCounts, KeyedBreakersStats, BulkheadSize,
  RetryDecision, AttemptBudgetDecision, HedgeDecision, HedgingStats, AdaptiveThrottleStats,
  ThrottleWindow, BrownoutStats, LatencySummary, LatencyTrackerStats, DequeuedWaiter, DroppedWaiter,
  QueueDisciplineStats, HttpClassification, OutcomeVerdicts, ConfigField, ReclaimCounts,
  RegionGuardKind, RegionGuardInfo, FleetOptions, FleetEvent, FleetStats, FleetAllowanceStats, FleetBreakerStats,
} from '../index';

export {
  BrownoutTable, Deadline, QueueDiscipline, Limit, RetryDriver, RetryReceipt, CircuitBreakerPermit,
  KeyedBreakersPermit, BulkheadPermit, LimiterPermit, AdmissionPermit, nowNs, outcomeVerdicts,
  classifyHttp, parseRetryAfter, parseHttpDate, outcomeOfStatus, formatHttpDate,
  encodeGrpcTimeout, parseGrpcTimeout, encodeMillis, parseMillis, stableOffsetMs, nextStableRun,
  configSchema, RegionPermit, Fleet,
} from '../index';

/** A region budget's receipt: a `RetryReceipt` (the same class). */
export { RetryReceipt as RegionRetryReceipt } from '../index';

/** A breaker's state. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * How to classify an error (or, for `classifyResult`, a value): an outcome name, an outcome
 * with the server's Retry-After, or `undefined` for the default (`classifyError`).
 */
export type Classification = Outcome | {
  /** The outcome of the call contract. */
  outcome: Outcome;
  /** The server's Retry-After in ms, if it sent one. */
  retryAfterMs?: number | null;
} | null | undefined;

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
export interface Events<M extends Record<string, unknown>> {
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
export interface BreakerStateChange {
  /** The state before. */
  from: BreakerState;
  /** The state now. */
  to: BreakerState;
  /** The breaker. */
  breaker: CircuitBreaker;
}
/** A key's breaker changed state; `key` is `null` when the change was made by another
 * thread for a key this thread has not named. */
export interface KeyedStateChange {
  /** The key, or `null` for a key this thread has not named. */
  key: string | null;
  /** The key's 64-bit hash (what every thread sees). */
  keyId: bigint;
  /** The key's breaker state now. */
  to: BreakerState;
  /** The keyed set. */
  breakers: KeyedBreakers;
}
/** A limiter's limit moved. */
export interface LimitChange {
  /** The limit before. */
  from: number;
  /** The limit now. */
  to: number;
  /** The limiter. */
  limiter: Limiter;
}
/** An admission door's adaptive limit moved (`null`: no adaptive limit). */
export interface AdmissionLimitChange {
  /** The adaptive limit before. */
  from: number | null;
  /** The adaptive limit now. */
  to: number | null;
  /** The door. */
  admission: Admission;
}

/** The events of a guard emitting `BreakerStateChange`. */
export type BreakerStateEvents = {
  /** A state change: `BreakerStateChange`. */
  stateChange: BreakerStateChange;
}

/** The events of a guard emitting `KeyedStateChange`. */
export type KeyedStateEvents = {
  /** A state change: `KeyedStateChange`. */
  stateChange: KeyedStateChange;
}

/** The events of a guard emitting `LimitChange`. */
export type LimitEvents = {
  /** A limit change: `LimitChange`. */
  limitChange: LimitChange;
}

/** The events of a guard emitting `AdmissionLimitChange`. */
export type AdmissionLimitEvents = {
  /** A limit change: `AdmissionLimitChange`. */
  limitChange: AdmissionLimitChange;
}

/** The events of a guard emitting `RegionBreakerStateChange`. */
export type RegionBreakerStateEvents = {
  /** A state change: `RegionBreakerStateChange`. */
  stateChange: RegionBreakerStateChange;
}

/** The events of a guard emitting `RegionKeyedStateChange`. */
export type RegionKeyedStateEvents = {
  /** A state change: `RegionKeyedStateChange`. */
  stateChange: RegionKeyedStateChange;
}

/** The events of a guard emitting `RegionLimitChange`. */
export type RegionLimitEvents = {
  /** A limit change: `RegionLimitChange`. */
  limitChange: RegionLimitChange;
}

/** The events of a guard emitting `RegionAdmissionLimitChange`. */
export type RegionAdmissionLimitEvents = {
  /** A limit change: `RegionAdmissionLimitChange`. */
  limitChange: RegionAdmissionLimitChange;
}

/** A circuit breaker with `execute`, events and sharing between worker threads. */
export declare class CircuitBreaker extends native.CircuitBreaker implements Events<BreakerStateEvents> {
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
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `stateChange` events. */
  on(event: 'stateChange', listener: (e: BreakerStateChange) => void): this;
  /** Listen to the next `stateChange` event. */
  once(event: 'stateChange', listener: (e: BreakerStateChange) => void): this;
  /** Stop listening to `stateChange` events. */
  off(event: 'stateChange', listener: (e: BreakerStateChange) => void): this;
}

/** One circuit breaker per key, with `execute`, events and sharing. */
export declare class KeyedBreakers extends native.KeyedBreakers implements Events<KeyedStateEvents> {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: KeyedBreakersOptions): KeyedBreakers;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): KeyedBreakers;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** Run `fn` through the breaker of `key` (see `CircuitBreaker.execute`). */
  execute<T>(key: string, fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `stateChange` events. */
  on(event: 'stateChange', listener: (e: KeyedStateChange) => void): this;
  /** Listen to the next `stateChange` event. */
  once(event: 'stateChange', listener: (e: KeyedStateChange) => void): this;
  /** Stop listening to `stateChange` events. */
  off(event: 'stateChange', listener: (e: KeyedStateChange) => void): this;
}

/** A bulkhead with `execute` and sharing. */
export declare class Bulkhead extends native.Bulkhead {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: BulkheadOptions): Bulkhead;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): Bulkhead;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** Run `fn` holding a slot; `BulkheadFullError` at the cap, without calling it. */
  execute<T>(fn: () => T | PromiseLike<T>): Promise<Awaited<T>>;
}

/** A concurrency limiter with `execute`, events and sharing. */
export declare class Limiter extends native.Limiter implements Events<LimitEvents> {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: LimiterOptions): Limiter;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): Limiter;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** Run `fn` under the limit; `LimitExceededError` when refused. */
  execute<T>(fn: () => T | PromiseLike<T>, options?: LimiterExecuteOptions): Promise<Awaited<T>>;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `limitChange` events. */
  on(event: 'limitChange', listener: (e: LimitChange) => void): this;
  /** Listen to the next `limitChange` event. */
  once(event: 'limitChange', listener: (e: LimitChange) => void): this;
  /** Stop listening to `limitChange` events. */
  off(event: 'limitChange', listener: (e: LimitChange) => void): this;
}

/** Admission control with events and sharing (use it through the middlewares). */
export declare class Admission extends native.Admission implements Events<AdmissionLimitEvents> {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: AdmissionOptions): Admission;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): Admission;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `limitChange` events. */
  on(event: 'limitChange', listener: (e: AdmissionLimitChange) => void): this;
  /** Listen to the next `limitChange` event. */
  once(event: 'limitChange', listener: (e: AdmissionLimitChange) => void): this;
  /** Stop listening to `limitChange` events. */
  off(event: 'limitChange', listener: (e: AdmissionLimitChange) => void): this;
}

/** A retry budget (token bucket, gRPC throttling, AWS quota or windowed) that worker threads can share. */
export declare class RetryBudget extends native.RetryBudget {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: RetryBudgetOptions): RetryBudget;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): RetryBudget;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
}
/** A retry policy (attempt cap, backoff with jitter, Retry-After, idempotency) that worker threads can share. */
export declare class RetryPolicy extends native.RetryPolicy {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: RetryPolicyOptions): RetryPolicy;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): RetryPolicy;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
}
/** A hedging policy (hedge after a tracked percentile, paid from a retry budget) that worker threads can share. */
export declare class Hedging extends native.Hedging {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: HedgingOptions): Hedging;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): Hedging;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
}
/** A streaming latency tracker (P50 to P99.9 over rotating windows) that worker threads can share. */
export declare class LatencyTracker extends native.LatencyTracker {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: LatencyTrackerOptions): LatencyTracker;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): LatencyTracker;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
}
/** A client-side adaptive throttle (rejection probability from accepts and requests) that worker threads can share. */
export declare class AdaptiveThrottle extends native.AdaptiveThrottle {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: AdaptiveThrottleOptions): AdaptiveThrottle;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): AdaptiveThrottle;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
}
/** A brownout policy for one operation (serve a fallback or fail fast) that worker threads can share. */
export declare class Brownout extends native.Brownout {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: BrownoutOptions): Brownout;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): Brownout;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
  get sharedMemory(): SharedArrayBuffer | undefined;
}
/** A backoff with jitter and its generator, that worker threads can share. */
export declare class Backoff extends native.Backoff {
  /** One built in a new `SharedArrayBuffer` (`sharedMemory`): post the buffer to workers. */
  static shared(options?: BackoffOptions & { seed?: number | bigint }): Backoff;
  /** The one another thread built in `buffer` (with `shared`). */
  static fromShared(buffer: SharedArrayBuffer): Backoff;
  /** The `SharedArrayBuffer` it lives in (`undefined` unless built by `shared`). */
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
export interface RegionBreakerStateChange {
  /** The state before. */
  from: BreakerState;
  /** The state now. */
  to: BreakerState;
  /** The region breaker. */
  breaker: RegionCircuitBreaker;
}
/** A region limiter's limit moved. */
export interface RegionLimitChange {
  /** The limit before. */
  from: number;
  /** The limit now. */
  to: number;
  /** The region limiter. */
  limiter: RegionLimiter;
}

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
export declare class RegionCircuitBreaker extends native.RegionCircuitBreaker implements Events<RegionBreakerStateEvents> {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: CircuitBreakerOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Run `fn` through the guard (see `CircuitBreaker.execute`). */
  execute<T>(fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `stateChange` events. */
  on(event: 'stateChange', listener: (e: RegionBreakerStateChange) => void): this;
  /** Listen to the next `stateChange` event. */
  once(event: 'stateChange', listener: (e: RegionBreakerStateChange) => void): this;
  /** Stop listening to `stateChange` events. */
  off(event: 'stateChange', listener: (e: RegionBreakerStateChange) => void): this;
}

/** A key's breaker in a region changed state (`key` is `null` for a key this process has not named). */
export interface RegionKeyedStateChange {
  /** The key, or `null` for a key this process has not named. */
  key: string | null;
  /** The key's 64-bit hash (what every process sees). */
  keyId: bigint;
  /** The key's breaker state now. */
  to: BreakerState;
  /** The region's keyed set. */
  breakers: RegionKeyedBreakers;
}

/** One breaker per key in a region, with `execute` and events (see `KeyedBreakers`); `createFetch` takes it. */
export declare class RegionKeyedBreakers extends native.RegionKeyedBreakers implements Events<RegionKeyedStateEvents> {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: KeyedBreakersOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Run `fn` through the breaker of `key` (see `KeyedBreakers.execute`). */
  execute<T>(key: string, fn: () => T | PromiseLike<T>, options?: ExecuteOptions): Promise<Awaited<T>>;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `stateChange` events. */
  on(event: 'stateChange', listener: (e: RegionKeyedStateChange) => void): this;
  /** Listen to the next `stateChange` event. */
  once(event: 'stateChange', listener: (e: RegionKeyedStateChange) => void): this;
  /** Stop listening to `stateChange` events. */
  off(event: 'stateChange', listener: (e: RegionKeyedStateChange) => void): this;
}

/** A bulkhead in a region, with `execute` (see `Bulkhead`). */
export declare class RegionBulkhead extends native.RegionBulkhead {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: BulkheadOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Run `fn` through the guard (see `Bulkhead.execute`). */
  execute<T>(fn: () => T | PromiseLike<T>): Promise<Awaited<T>>;
}

/** A limiter in a region, with `execute` and events (see `Limiter`). */
export declare class RegionLimiter extends native.RegionLimiter implements Events<RegionLimitEvents> {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: LimiterOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Run `fn` through the guard (see `Limiter.execute`). */
  execute<T>(fn: () => T | PromiseLike<T>, options?: LimiterExecuteOptions): Promise<Awaited<T>>;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `limitChange` events. */
  on(event: 'limitChange', listener: (e: RegionLimitChange) => void): this;
  /** Listen to the next `limitChange` event. */
  once(event: 'limitChange', listener: (e: RegionLimitChange) => void): this;
  /** Stop listening to `limitChange` events. */
  off(event: 'limitChange', listener: (e: RegionLimitChange) => void): this;
}

/** A region door's adaptive limit moved (`null`: no adaptive limit). */
export interface RegionAdmissionLimitChange {
  /** The adaptive limit before. */
  from: number | null;
  /** The adaptive limit now. */
  to: number | null;
  /** The region door. */
  admission: RegionAdmission;
}

/** Admission control in a region, with events (see `Admission`); the middlewares take it. */
export declare class RegionAdmission extends native.RegionAdmission implements Events<RegionAdmissionLimitEvents> {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: AdmissionOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** The guard's emitter (made on first use). */
  readonly events: EventEmitter;
  /** Listen to `limitChange` events. */
  on(event: 'limitChange', listener: (e: RegionAdmissionLimitChange) => void): this;
  /** Listen to the next `limitChange` event. */
  once(event: 'limitChange', listener: (e: RegionAdmissionLimitChange) => void): this;
  /** Stop listening to `limitChange` events. */
  off(event: 'limitChange', listener: (e: RegionAdmissionLimitChange) => void): this;
}

/**
 * A retry budget in a region: a `RetryBudget` whose balance and counters are every
 * process's (so `retry({ budget })`, `createFetch({ budget })`, `RetryDriver` and the gates
 * take it). Not placeable in a buffer: `shared` / `fromShared` throw.
 */
export declare class RegionRetryBudget extends RetryBudget {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: RetryBudgetOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Its name in the region. */
  get name(): string;
  /** Not placeable in a buffer: throws. */
  static shared(options?: unknown): never;
  /** Not placeable in a buffer: throws. */
  static fromShared(buffer: unknown): never;
  /** This budget as a retry gate function (each `true` has withdrawn a retry's cost). */
  gate(): RetryGateFunction;
}

/** A hedging policy in a region: a `Hedging` whose latency samples and counters are every process's. */
export declare class RegionHedging extends Hedging {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: HedgingOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Its name in the region. */
  get name(): string;
  /** Not placeable in a buffer: throws. */
  static shared(options?: unknown): never;
  /** Not placeable in a buffer: throws. */
  static fromShared(buffer: unknown): never;
}

/** A latency tracker in a region: a `LatencyTracker` fed by every process. */
export declare class RegionLatencyTracker extends LatencyTracker {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: LatencyTrackerOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Its name in the region. */
  get name(): string;
  /** Not placeable in a buffer: throws. */
  static shared(options?: unknown): never;
  /** Not placeable in a buffer: throws. */
  static fromShared(buffer: unknown): never;
}

/** An adaptive throttle in a region: an `AdaptiveThrottle` counting every process's requests and accepts. */
export declare class RegionAdaptiveThrottle extends AdaptiveThrottle {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: AdaptiveThrottleOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Its name in the region. */
  get name(): string;
  /** Not placeable in a buffer: throws. */
  static shared(options?: unknown): never;
  /** Not placeable in a buffer: throws. */
  static fromShared(buffer: unknown): never;
}

/** A brownout (one operation) in a region: a `Brownout` whose counters are every process's. */
export declare class RegionBrownout extends Brownout {
  /** Use the `Region` methods (`region.circuitBreaker(name, options)`, ...) rather than this. */
  constructor(region: Region, name: string, options?: BrownoutOptions, attach?: boolean);
  /** The region it lives in. */
  get region(): Region;
  /** Its name in the region. */
  get name(): string;
  /** Not placeable in a buffer: throws. */
  static shared(options?: unknown): never;
  /** Not placeable in a buffer: throws. */
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
  policy?: RetryPolicy;
  /** The budget that pays for retries. */
  budget?: RetryBudget;
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
  classifyResult?: (value: any) => Classification;
  /** Called before each wait (as the `retry` event). */
  onRetry?: (info: RetryInfo) => void;
  /** A name, for your own records. */
  name?: string;
}

/** Per call: the caller's signal, and a narrower deadline or time limit. */
export interface RetryCallOptions {
  /** Aborting it abandons the call (the attempt in flight is aborted, no retry follows). */
  signal?: AbortSignal;
  /** This call's deadline, an instant (bigint ns on the monotonic clock), narrowing the plan's. */
  deadline?: bigint;
  /** This call's time limit in ms (or exact ns as a bigint), narrowing the plan's. */
  timeoutMs?: number | bigint;
}

/** The `retry` event: attempt `attempt` ended with `outcome`, retry in `delayMs`. */
export interface RetryInfo {
  /** The attempt that ended, from 1. */
  attempt: number;
  /** How it ended. */
  outcome: Outcome;
  /** What it threw (`undefined` for a value classified as a failure). */
  error: unknown;
  /** What it returned, when `classifyResult` judged the value a failure. */
  value: unknown;
  /** The wait before the next attempt, in ms. */
  delayMs: number;
  /** The plan. */
  retry: Retry;
}
/** The `giveUp` event. */
export interface GiveUpInfo {
  /** Why no further attempt is made. */
  reason: GiveUpReason;
  /** The attempts made. */
  attempts: number;
  /** What the last attempt threw, if anything. */
  error: unknown;
  /** How the last attempt ended. */
  outcome: Outcome;
  /** The plan. */
  retry: Retry;
}

/** Counters of a plan's calls. */
export interface RetryStats {
  /** Calls made through the plan. */
  calls: number;
  /** Attempts, first ones included. */
  attempts: number;
  /** Attempts after the first. */
  retries: number;
  /** Calls that ended in a success. */
  successes: number;
  /** Calls that ended in a failure (retries given up). */
  failures: number;
  /** Attempts abandoned at their budget. */
  attemptTimeouts: number;
  /** Calls abandoned through the caller's signal. */
  cancelled: number;
  /** The policy's own counters (`RetryPolicy.stats()`). */
  policy: Record<string, number>;
}

/** A retry plan, built once and shared (on core's retry driver). */
export declare class Retry extends EventEmitter {
  /** A plan from `options` (the policy's options or `policy`, the budget, the time limits). */
  constructor(options?: RetryOptions);
  /** The policy deciding each retry. */
  readonly policy: RetryPolicy;
  /** The budget paying for the retries, if any. */
  readonly budget: RetryBudget | undefined;
  /** The plan's counters. */
  stats(): RetryStats;
  /** Run `fn` with retries. */
  execute<T>(fn: (attempt: AttemptInfo) => T | PromiseLike<T>, options?: RetryCallOptions): Promise<Awaited<T>>;
  /** Listen to `retry` events. */
  on(event: 'retry', listener: (e: RetryInfo) => void): this;
  /** Listen to `giveUp` events. */
  on(event: 'giveUp', listener: (e: GiveUpInfo) => void): this;
  /** Listen to the next `retry` event. */
  once(event: 'retry', listener: (e: RetryInfo) => void): this;
  /** Listen to the next `giveUp` event. */
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
export type Guard = CircuitBreaker | KeyedBreakers | Bulkhead | Limiter | Admission | AdaptiveThrottle
  | RegionCircuitBreaker | RegionKeyedBreakers | RegionBulkhead | RegionLimiter;

/** A fallback: a value, or a function of the error. */
export type Fallback<F> = ((err: unknown) => F | PromiseLike<F>) | Exclude<F, Function>;

/** Options of `guarded`. */
export interface GuardedOptions<F = never> {
  /** Served for refusals and dependency failures (never for your own errors). */
  fallback?: Fallback<F>;
  /** Which kinds get the fallback (default: an optional operation, every kind). */
  brownout?: Brownout;
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
  /** A name, for your own records. */
  name?: string;
}

/** The `fallback` event. */
export interface FallbackInfo {
  /** Whether the fallback was served (else the error went on). */
  served: boolean;
  /** The kind of refusal or failure, or `null` for an error that is not one. */
  kind: RefusalKind | null;
  /** The error. */
  error: unknown;
}

/** Counters of a `Guarded` stack. */
export interface GuardedStats {
  /** Calls made. */
  calls: number;
  /** Calls answered in full (by `fn`). */
  full: number;
  /** Calls answered by the fallback. */
  fallbacks: number;
  /** Calls that ended in an error. */
  errors: number;
  /** With a brownout policy: its decisions. */
  brownout?: {
    /** Full answers. */
    full: number;
    /** Degraded answers (the fallback served). */
    degraded: number;
    /** Errors passed on (fail fast). */
    errors: number;
    /** Exempt calls made anyway. */
    proceeded: number;
  };
}

/** A call stack of guards. */
export declare class Guarded<F = never> extends EventEmitter {
  /** A stack of `guards` (outermost first) with `options`. */
  constructor(guards: readonly Guard[], options?: GuardedOptions<F>);
  /** The stack's counters. */
  stats(): GuardedStats;
  /** Run `fn` through the stack. */
  execute<T>(fn: (attempt: AttemptInfo) => T | PromiseLike<T>, options?: RetryCallOptions): Promise<Awaited<T> | F>;
  /** `fn` wrapped: the same arguments, run through the stack. */
  wrap<A extends unknown[], T>(fn: (...args: A) => T | PromiseLike<T>): (...args: A) => Promise<Awaited<T> | F>;
  /** Listen to `fallback` events. */
  on(event: 'fallback', listener: (e: FallbackInfo) => void): this;
  /** Listen to the next `fallback` event. */
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
  breakers?: KeyedBreakers | RegionKeyedBreakers | null;
  /** The deadline header sent: `grpc-timeout` (default), milliseconds, or none. */
  deadlineHeader?: 'grpc' | 'millis' | null;
  /** The budget that pays for retries (default: one per client; `null`: none). */
  budget?: RetryBudget | null;
}

/** `fetch`'s init, and this call's time limit. */
export type GuardedRequestInit = RequestInit & {
  /** This call's time limit in ms (retries and waits included), narrowing the client's. */
  timeoutMs?: number;
};

/** A guarded `fetch`. */
export interface GuardedFetch {
  (input: string | URL | Request, init?: GuardedRequestInit): Promise<Response>;
  /** The breaker per host, or `null` for none. */
  readonly breakers: KeyedBreakers | RegionKeyedBreakers | null;
  /** The budget paying for retries, if any. */
  readonly budget: RetryBudget | undefined;
  /** The counters of the three retry plans, by the request's idempotency. */
  stats(): {
    /** Idempotent requests (GET, PUT, ...). */
    idempotent: RetryStats;
    /** Requests with an idempotency key. */
    keyed: RetryStats;
    /** Other requests (never retried once sent). */
    unkeyed: RetryStats;
  };
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
  /** Requests seen. */
  requests: number;
  /** Requests let in without a slot (exempt paths). */
  exempt: number;
  /** Requests admitted. */
  admitted: number;
  /** Requests refused with 503. */
  rejected: number;
  /** Admitted requests whose handler answered 503 (reported as overloaded). */
  overloaded: number;
  /** Admitted requests whose client went away before the answer. */
  disconnected: number;
  /** Admitted requests whose handler threw. */
  errors: number;
}

/** What each admission middleware also has. */
export interface AdmissionMiddlewareCounters {
  /** The middleware's counters. */
  stats(): AdmissionMiddlewareStats;
}

/** A node:http handler behind the door. */
export declare function httpAdmission(
  admission: Admission | RegionAdmission,
  handler: (req: IncomingMessage, res: ServerResponse) => unknown,
  options?: AdmissionMiddlewareOptions,
): ((req: IncomingMessage, res: ServerResponse) => void) & AdmissionMiddlewareCounters;

/** Express middleware: `app.use(expressAdmission(door))`. */
export declare function expressAdmission(
  admission: Admission | RegionAdmission,
  options?: AdmissionMiddlewareOptions,
): ((req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void) & AdmissionMiddlewareCounters;

/** A Fastify `onRequest` hook: `fastify.addHook('onRequest', fastifyAdmission(door))`. */
export declare function fastifyAdmission(
  admission: Admission | RegionAdmission,
  options?: AdmissionMiddlewareOptions,
): ((request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): unknown }, done: (err?: Error) => void) => void) & AdmissionMiddlewareCounters;

/** A priority function reading header `name`: a number 0..7 or a name (`critical`, ...). */
export declare function priorityFromHeader(name?: string, fallback?: number): (req: IncomingMessage) => number;

// ---------------------------------------------------------------------------------------
// metrics, outcomes

/** What `prometheusCollector` registered. */
export interface PrometheusRegistration {
  /** The metric names registered. */
  metrics: string[];
}

/** Register every numeric stat of `guards` (name → anything with `stats()`) as
 * `guards_<stat>` on a prom-client registry. */
export declare function prometheusCollector(
  guards: Record<string, { stats(): object }>,
  options?: { registry?: unknown; prefix?: string },
): PrometheusRegistration;

/** The outcome (and Retry-After) of an error thrown by a call. */
export declare function classifyError(err: unknown): {
  /** The outcome of the call contract. */
  outcome: Outcome;
  /** The server's Retry-After in ms, when the error carries one. */
  retryAfterMs: number | null;
};

/** The outcomes, by number. */
export declare const OUTCOMES: readonly Outcome[];

/** The addon's version. */
export declare const version: string;

// ---------------------------------------------------------------------------------------
// errors

/** A bad option or argument: a `TypeError` (wrong type, unknown name) or `RangeError`. */
export interface InvalidOptionError extends Error {
  /** Always `GUARDS_INVALID_OPTION`. */
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
  /** A stable code (`GUARDS_...`) naming the error. */
  code: string;
}
/** A guard refused the call before it was made. */
export declare class RejectedError extends GuardsError {
  /** Why (the guard's reason name). */
  reason?: string;
  /** When to try again (bigint ns on the monotonic clock), if the guard knows. */
  retryAt?: bigint;
  /** The same as a duration in ms from when it refused, if the guard knows. */
  retryAfterMs?: number;
}
/** A breaker is open (or its half-open probes are all out). */
export declare class BreakerOpenError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_BREAKER_OPEN' | 'GUARDS_BREAKER_HALF_OPEN_FULL';
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** A keyed set has no free slot for a new key. */
export declare class BreakersFullError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_BREAKERS_FULL';
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** A bulkhead is at its cap. */
export declare class BulkheadFullError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_BULKHEAD_FULL';
  /** Calls in flight when it refused. */
  inFlight: number;
  /** The cap. */
  maxConcurrent: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** A limiter refused the priority at its current limit. */
export declare class LimitExceededError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_LIMIT_EXCEEDED';
  /** The refused priority. */
  priority: number;
  /** Calls in flight when it refused. */
  inFlight: number;
  /** The threshold the priority was held to. */
  threshold: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** An admission door refused the request (answer 503 with Retry-After). */
export declare class AdmissionRejectedError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_ADMISSION_REJECTED';
  /** The Retry-After header value, in whole seconds. */
  retryAfterSecs: number;
  /** The refused priority. */
  priority: number;
  /** Requests inside when it refused. */
  inFlight: number;
  /** The threshold the priority was held to. */
  threshold: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** A wait queue is full. */
export declare class QueueFullError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_QUEUE_FULL';
  /** The queue's capacity. */
  capacity: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** The adaptive throttle refused the call locally. */
export declare class ThrottledError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_THROTTLED';
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** A retry was due but the retry budget refused it. */
export declare class BudgetExhaustedError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_BUDGET_EXHAUSTED';
  /** Attempts made. */
  attempts: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** Every attempt the policy allows failed. */
export declare class RetriesExhaustedError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_RETRIES_EXHAUSTED';
  /** Attempts made. */
  attempts: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** The deadline passed (or too little of it was left for another attempt). */
export declare class DeadlineExceededError extends RejectedError {
  /** The error's code. */
  code: 'GUARDS_DEADLINE_EXCEEDED';
  /** Attempts made. */
  attempts: number;
  /** When to try again in ms, if known (see `RejectedError`). */
  retryAfterMs?: number;
}
/** One attempt outlived its budget and was abandoned. */
export declare class AttemptTimeoutError extends GuardsError {
  /** The error's code. */
  code: 'GUARDS_ATTEMPT_TIMEOUT';
}
/** A permit (or receipt) reported twice, or to another guard. */
export declare class PermitError extends GuardsError {
  /** The error's code. */
  code: 'GUARDS_PERMIT_ALREADY_REPORTED' | 'GUARDS_PERMIT_WRONG_GUARD' | 'GUARDS_PERMIT_UNKNOWN';
}
/** A RetryDriver call in the wrong phase (nothing changed). */
export declare class RetryDriverError extends GuardsError {
  /** The error's code. */
  code: 'GUARDS_RETRY_DRIVER_PHASE';
  /** The method called. */
  call: string;
  /** The phase the driver was in. */
  phase: string;
}
/** A bug in guards. */
export declare class InternalError extends GuardsError {
  /** The error's code. */
  code: 'GUARDS_INTERNAL';
}
/** A shared region refused (`errno` for GUARDS_REGION_IO). */
export declare class RegionError extends GuardsError {
  /** The error's code. */
  code: 'GUARDS_REGION_IO' | 'GUARDS_REGION_INVALID' | 'GUARDS_REGION_INCOMPATIBLE' | 'GUARDS_REGION_FULL'
    | 'GUARDS_REGION_TIMEOUT' | 'GUARDS_GUARD_MISMATCH' | 'GUARDS_GUARD_NOT_FOUND' | 'GUARDS_PERMIT_SLOTS_EXHAUSTED';
  /** For `GUARDS_REGION_IO`: the system's error number. */
  errno?: number;
}
/** A fleet member could not join Redis, or refused an `attach`. */
export declare class FleetError extends GuardsError {
  /**
   * The error's code: Redis unreachable (`join`), credentials refused (`join`), an
   * allowance or a guard attached twice, or an `attach` after `leave()`.
   */
  code: 'GUARDS_FLEET_UNAVAILABLE' | 'GUARDS_FLEET_AUTH' | 'GUARDS_FLEET_DUPLICATE' | 'GUARDS_FLEET_LEFT';
  /** For GUARDS_FLEET_DUPLICATE: the allowance. */
  allowance?: string;
}
/** A guard of that name exists with another kind, capacity or config. */
export declare class GuardMismatchError extends RegionError {
  /** The error's code. */
  code: 'GUARDS_GUARD_MISMATCH';
  /** What differs. */
  field: 'kind' | 'capacity' | 'config';
  /** The region's value of `field` (a kind number, a capacity or a config hash). */
  existing: number;
  /** The value asked for, in the same form. */
  requested: number;
  /**
   * For a config mismatch: each option whose value differs, with the region's value and
   * the one asked for, as the options spell them (durations in ms, names).
   */
  differences?: Record<string, {
    /** The region's value. */
    existing: unknown;
    /** The value asked for. */
    requested: unknown;
  }>;
  /** For `GUARDS_REGION_IO` only (see `RegionError`). */
  errno?: number;
}
