'use strict';
// Host-wide guards: a Region is a file mapped by every process that opens it (the workers
// of a cluster, child processes, any process of the machine), holding named guards. Every
// process that asks the region for the breaker "stock" gets the same breaker: one
// process's failures open it for all, a bulkhead's cap holds for the host. Permits are
// recorded with their owner process, so a process that dies holding some gives them back
// (region.reclaim(), the next acquire that finds the guard full, or the next open).
//
// The guards here have the API of the package's classes (execute, tryAcquire, stats,
// events); every decision is the native guard's (node/src/region.rs). Events: this
// process's own calls emit at once; changes made by other processes are seen by polling
// the guard every `pollInterval` ms while someone listens (a timer that keeps no process
// alive). The kinds without permits (retry budget, hedging, latency tracker, adaptive
// throttle, brownout) are the package's own classes over the region's memory: a region
// budget is a RetryBudget, so retry(), createFetch and RetryDriver take it as it is.

const native = require('./native');
const errors = require('./errors');
const guards = require('./guards');
const { withEvents, fastOf, CHANGED, run, checkFn } = guards;
const { NUM, classifyWith } = require('./outcome');

const SUCCESS = NUM.success;
const STATES = ['closed', 'open', 'half_open'];
const DEFAULT_POLL_MS = 100;

function classifyOption(options) {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') throw errors.badOption('TypeError', 'options', 'execute(fn, options): options must be an object');
  const c = options.classify;
  if (c !== undefined && typeof c !== 'function') throw errors.badOption('TypeError', 'classify', 'execute: `classify` must be a function');
  return c;
}

function outcomeOf(classify, err) {
  return NUM[classifyWith(classify, err).outcome];
}

/**
 * Events heard from other processes: while the object has listeners for one of `watched`,
 * a timer (unref'd) calls `_poll()` every `region.pollInterval` ms.
 */
function withPolling(Base, watched) {
  return class extends Base {
    #timer = null;
    #region;
    constructor(region, name, options, attach) {
      super(region, name, options, attach);
      this.#region = region;
    }
    /** The region it lives in. */
    get region() { return this.#region; }
    on(event, listener) { super.on(event, listener); this.#start(event); return this; }
    once(event, listener) { super.once(event, listener); this.#start(event); return this; }
    off(event, listener) { super.off(event, listener); if (!this.#listening()) this.#stop(); return this; }
    #listening() {
      return watched.some((e) => this.events.listenerCount(e) > 0);
    }
    #start(event) {
      if (this.#timer !== null || !watched.includes(event)) return;
      this.#timer = setInterval(() => {
        if (!this.#listening()) { this.#stop(); return; }
        try { this._poll(); } catch (err) { process.emitWarning(err); }
      }, this.#region.pollInterval ?? DEFAULT_POLL_MS);
      this.#timer.unref();
    }
    #stop() {
      if (this.#timer !== null) { clearInterval(this.#timer); this.#timer = null; }
    }
  };
}

/** A circuit breaker in a region (`region.circuitBreaker(name, options)`). */
class RegionCircuitBreaker extends withPolling(withEvents(native.RegionCircuitBreaker, ['stateChange']), ['stateChange']) {
  #acquire; #report;
  #state;
  #done = (t, outcome) => {
    const r = this.#report(t, outcome);
    if (r >= CHANGED) this.#emitState(STATES[r - CHANGED]);
  };

  constructor(region, name, options, attach) {
    super(region, name, options, attach);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#report = f.report;
    this.#state = this.status().state;
  }

  #emitState(to) {
    if (to === this.#state) return;
    const from = this.#state;
    this.#state = to;
    this._emit('stateChange', { from, to, breaker: this });
  }

  /** @internal The timer: emit what other processes changed. */
  _poll() {
    this._sync();
    this.#emitState(this.status().state);
  }

  /**
   * Run `fn` through the breaker (see `CircuitBreaker.execute`): a refusal rejects with
   * `BreakerOpenError` without calling it; its result or error is reported.
   */
  execute(fn, options) {
    checkFn(fn);
    const classify = options === undefined ? undefined : classifyOption(options);
    let t = this.#acquire();
    if (t < 0) return Promise.reject(this.#refusal());
    if (t >= CHANGED) { t -= CHANGED; this.#emitState(this.status().state); }
    return run(fn, t, this.#done, classify);
  }

  /** @internal For `guarded`: take a permit (or throw the refusal); returns its report. */
  _guard() {
    let t = this.#acquire();
    if (t < 0) throw this.#refusal();
    if (t >= CHANGED) { t -= CHANGED; this.#emitState(this.status().state); }
    return (o) => this.#done(t, o);
  }

  #refusal() {
    try { this._lastRejection(); } catch (e) { return e; }
    return new errors.BreakerOpenError('the circuit breaker is open');
  }
}

/** One breaker per key in a region (`region.keyedBreakers(name, options)`). */
class RegionKeyedBreakers extends withPolling(withEvents(native.RegionKeyedBreakers, ['stateChange']), ['stateChange']) {
  #acquire; #report;
  /** Key strings by key (bigint), for events heard from other processes. */
  #names = new Map();

  constructor(region, name, options, attach) {
    super(region, name, options, attach);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#report = f.report;
  }

  #changed(key) {
    const keyId = native.KeyedBreakers.keyOf(key);
    if (this.#names.size < 1024) this.#names.set(keyId, key);
    this._emit('stateChange', { key, keyId, to: this.state(key), breakers: this });
  }

  /** @internal The timer: emit what other processes changed. */
  _poll() {
    for (const [keyId, to] of this._changes()) {
      this._emit('stateChange', { key: this.#names.get(keyId) ?? null, keyId, to, breakers: this });
    }
  }

  /** Run `fn` through the breaker of `key` (see `CircuitBreaker.execute`). */
  execute(key, fn, options) {
    if (typeof key !== 'string') throw errors.badOption('TypeError', 'key', `execute(key, fn): key must be a string, not ${typeof key}`);
    checkFn(fn);
    const classify = options === undefined ? undefined : classifyOption(options);
    let t = this.#acquire(key);
    if (t < 0) return Promise.reject(this.#refusal(key));
    if (t >= CHANGED) { t -= CHANGED; this.#changed(key); }
    return run(fn, t, (tok, outcome) => {
      if (this.#report(tok, outcome) >= CHANGED) this.#changed(key);
    }, classify);
  }

  /** @internal For `guarded` and `createFetch`: take a permit for `opts.key` (or throw). */
  _guard(opts) {
    const key = opts.key;
    let t = this.#acquire(key);
    if (t < 0) throw this.#refusal(key);
    if (t >= CHANGED) { t -= CHANGED; this.#changed(key); }
    return (o) => { if (this.#report(t, o) >= CHANGED) this.#changed(key); };
  }

  #refusal(key) {
    try { this._lastRejection(key); } catch (e) { return e; }
    return new errors.BreakerOpenError(`the circuit breaker for ${key} refused`);
  }
}

/** A bulkhead in a region (`region.bulkhead(name, options)`). */
class RegionBulkhead extends withPolling(withEvents(native.RegionBulkhead), []) {
  #acquire; #release;

  constructor(region, name, options, attach) {
    super(region, name, options, attach);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#release = f.release;
  }

  /** Run `fn` holding a slot; `BulkheadFullError` at the cap (all processes), without calling it. */
  execute(fn) {
    checkFn(fn);
    const t = this.#acquire();
    if (t < 0) return Promise.reject(this.#refusal());
    const release = this.#release;
    return run(fn, t, (tok) => { release(tok); }, undefined);
  }

  /** @internal For `guarded`: take a slot (or throw); returns its release. */
  _guard() {
    const t = this.#acquire();
    if (t < 0) throw this.#refusal();
    return () => { this.#release(t); };
  }

  #refusal() {
    try { this._lastRejection(); } catch (e) { return e; }
    return new errors.BulkheadFullError('the bulkhead is full');
  }

  /** @internal */
  _poll() {}
}

/** A concurrency limiter in a region (`region.limiter(name, options)`). */
class RegionLimiter extends withPolling(withEvents(native.RegionLimiter, ['limitChange']), ['limitChange']) {
  #acquire; #report;
  #limit;
  #done = (t, outcome) => {
    const l = this.#report(t, outcome);
    if (l >= 0) this.#emitLimit(l);
  };

  constructor(region, name, options, attach) {
    super(region, name, options, attach);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#report = f.report;
    this.#limit = this.limit;
  }

  #emitLimit(l) {
    if (l === this.#limit) return;
    const from = this.#limit;
    this.#limit = l;
    this._emit('limitChange', { from, to: l, limiter: this });
  }

  /** @internal The timer: emit what other processes changed. */
  _poll() { this.#emitLimit(this.limit); }

  /** Run `fn` under the limit (`options.priority`, 0..7); `LimitExceededError` when refused. */
  execute(fn, options) {
    checkFn(fn);
    const classify = options === undefined ? undefined : classifyOption(options);
    const p = options && options.priority !== undefined ? options.priority : 0;
    const t = this.#acquire(p);
    if (t < 0) return Promise.reject(this.#refusal());
    return run(fn, t, this.#done, classify);
  }

  /** @internal For `guarded`: take a permit at `opts.priority` (or throw); returns its report. */
  _guard(opts) {
    const t = this.#acquire(opts.priority ?? 0);
    if (t < 0) throw this.#refusal();
    return (o) => this.#done(t, o);
  }

  #refusal() {
    try { this._lastRejection(); } catch (e) { return e; }
    return new errors.LimitExceededError('the limiter refused the call');
  }
}

/**
 * Admission control in a region (`region.admission(name, options)`): one door for every
 * process; give it to `httpAdmission` / `expressAdmission` / `fastifyAdmission`.
 */
class RegionAdmission extends withPolling(withEvents(native.RegionAdmission, ['limitChange']), ['limitChange']) {
  #limit;

  constructor(region, name, options, attach) {
    super(region, name, options, attach);
    this.#limit = this.limit;
  }

  /** @internal The middleware's report returned `l` (the limit, -2 without one). */
  _limitSeen(l) {
    if (l >= 0) this.#emitLimit(l);
  }

  #emitLimit(to) {
    if (to === this.#limit) return;
    const from = this.#limit;
    this.#limit = to;
    this._emit('limitChange', { from, to, admission: this });
  }

  /** @internal The timer: emit what other processes changed. */
  _poll() { this.#emitLimit(this.limit); }
}

/**
 * A guard without permits in a region, as the package's own class: `Base` (`RetryBudget`,
 * `Hedging`, ...) over the region's memory, so that it goes wherever one of those goes
 * (`retry({ budget })`, `createFetch({ budget })`, `RetryDriver`, a gate). `place` is the
 * native region method that finds or creates the guard (`_retryBudget`, ...).
 */
function inRegion(Base, place, what) {
  return class extends Base {
    #region; #name;
    constructor(region, name, options, attach) {
      super(undefined, placeIn(region, place, name, options, attach));
      this.#region = region;
      this.#name = name;
    }
    /** The region it lives in. */
    get region() { return this.#region; }
    /** Its name in the region. */
    get name() { return this.#name; }
    static shared() { throw errors.badOption('TypeError', 'shared', `${what} lives in a region: share the region, not a buffer`); }
    static fromShared() { throw errors.badOption('TypeError', 'buffer', `${what} lives in a region: open the region and ask it for the guard by name`); }
  };
}

function placeIn(region, place, name, options, attach) {
  if (!(region instanceof native.Region)) {
    throw errors.badOption('TypeError', 'region', `\`region\` must be a Region, not ${region === null ? 'null' : typeof region}`);
  }
  return region[place](name, options, attach);
}

/**
 * A retry budget in a region (`region.retryBudget(name, options)`): a `RetryBudget` whose
 * balance and counters are every process's.
 */
class RegionRetryBudget extends inRegion(guards.RetryBudget, '_retryBudget', 'RegionRetryBudget') {
  /**
   * This budget as a retry gate `(now, cause) => boolean`: each `true` has withdrawn a
   * retry's cost. (The budget itself is a gate too: `RetryPolicy.decide`'s `gate`,
   * `Hedging.shouldHedge`'s `budget`.)
   */
  gate() {
    return (now, cause) => this.withdraw(cause, now) !== null;
  }
}

/** A hedging policy in a region (`region.hedging(name, options)`): a `Hedging` fed by every process. */
class RegionHedging extends inRegion(guards.Hedging, '_hedging', 'RegionHedging') {}

/** A latency tracker in a region (`region.latencyTracker(name, options)`): a `LatencyTracker` fed by every process. */
class RegionLatencyTracker extends inRegion(guards.LatencyTracker, '_latencyTracker', 'RegionLatencyTracker') {}

/** An adaptive throttle in a region (`region.adaptiveThrottle(name, options)`): an `AdaptiveThrottle` counting every process's calls. */
class RegionAdaptiveThrottle extends inRegion(guards.AdaptiveThrottle, '_adaptiveThrottle', 'RegionAdaptiveThrottle') {}

/** A brownout (one operation) in a region (`region.brownout(name, options)`): a `Brownout` with every process's counters. */
class RegionBrownout extends inRegion(guards.Brownout, '_brownout', 'RegionBrownout') {}

const BY_KIND = {
  circuit_breaker: RegionCircuitBreaker,
  keyed_breakers: RegionKeyedBreakers,
  bulkhead: RegionBulkhead,
  limiter: RegionLimiter,
  admission: RegionAdmission,
  retry_budget: RegionRetryBudget,
  hedging: RegionHedging,
  latency_tracker: RegionLatencyTracker,
  adaptive_throttle: RegionAdaptiveThrottle,
  brownout: RegionBrownout,
};

function readPoll(options) {
  if (options === undefined || options === null || typeof options !== 'object' || !('pollInterval' in options)) {
    return [options, DEFAULT_POLL_MS];
  }
  const { pollInterval, ...rest } = options;
  if (pollInterval === undefined) return [rest, DEFAULT_POLL_MS];
  if (typeof pollInterval !== 'number') {
    throw errors.badOption('TypeError', 'pollInterval', `Region: \`pollInterval\` must be a number of milliseconds, not ${pollInterval === null ? 'null' : typeof pollInterval}`);
  }
  if (!Number.isFinite(pollInterval) || pollInterval < 1 || pollInterval > 3_600_000) {
    throw errors.badOption('RangeError', 'pollInterval', `Region: \`pollInterval\` must be 1..=3600000 ms, not ${pollInterval}`);
  }
  return [rest, pollInterval];
}

/**
 * A region of host-wide guards: `new Region(pathOrName, options)` (or `Region.open`). A
 * bare name means `/dev/shm/<name>`; a path with a `/` is used as it is. Options: the
 * native ones (`maxGuards`, `permitSlots`, `dataBytes`, `waitTimeout`, `reclaimInterval`,
 * `mode`, `create`) and `pollInterval` (ms between two looks at a guard for events from
 * other processes, default 100).
 */
class Region extends native.Region {
  #poll;
  constructor(path, options) {
    const [rest, poll] = readPoll(options);
    super(path, rest);
    this.#poll = poll;
  }

  /** Open (or create) the region at `path`: the same as `new Region(path, options)`. */
  static open(path, options) { return new this(path, options); }

  /** Milliseconds between two looks at a guard for other processes' changes. */
  get pollInterval() { return this.#poll; }

  /** The breaker named `name`, created with `options` (as `CircuitBreaker`'s) if there is none. */
  circuitBreaker(name, options) { return new RegionCircuitBreaker(this, name, options); }

  /** The keyed breaker set named `name`, created with `options` (and `slots`) if there is none. */
  keyedBreakers(name, options) { return new RegionKeyedBreakers(this, name, options); }

  /** The bulkhead named `name`, created with `options` if there is none. */
  bulkhead(name, options) { return new RegionBulkhead(this, name, options); }

  /** The limiter named `name`, created with `options` if there is none. */
  limiter(name, options) { return new RegionLimiter(this, name, options); }

  /** The admission door named `name`, created with `options` if there is none. */
  admission(name, options) { return new RegionAdmission(this, name, options); }

  /**
   * The retry budget named `name`, created with `options` (as `RetryBudget`'s) if there is
   * none: a `RetryBudget` (for `retry`, `createFetch`, `RetryDriver`, gates).
   */
  retryBudget(name, options) { return new RegionRetryBudget(this, name, options); }

  /** The hedging policy named `name`, created with `options` (as `Hedging`'s) if there is none. */
  hedging(name, options) { return new RegionHedging(this, name, options); }

  /** The latency tracker named `name`, created with `options` (as `LatencyTracker`'s) if there is none. */
  latencyTracker(name, options) { return new RegionLatencyTracker(this, name, options); }

  /** The adaptive throttle named `name`, created with `options` (as `AdaptiveThrottle`'s) if there is none. */
  adaptiveThrottle(name, options) { return new RegionAdaptiveThrottle(this, name, options); }

  /** The brownout (one operation) named `name`, created with `options` (as `Brownout`'s) if there is none. */
  brownout(name, options) { return new RegionBrownout(this, name, options); }

  /**
   * The existing guard named `name`, whatever its config (a monitoring tool, a process
   * that does not know the config): a RegionCircuitBreaker, RegionKeyedBreakers,
   * RegionBulkhead, RegionLimiter, RegionAdmission, RegionRetryBudget, RegionHedging,
   * RegionLatencyTracker, RegionAdaptiveThrottle or RegionBrownout by its kind.
   * `GUARDS_GUARD_NOT_FOUND` when there is none; a `GuardMismatchError` for a kind Node
   * does not hold.
   */
  attach(name) {
    const { kind } = this.lookup(name);
    const C = BY_KIND[kind];
    if (C === undefined) {
      const e = new errors.GuardMismatchError(`Region.attach: ${JSON.stringify(name)} is a ${kind}, which Node does not hold`);
      e.field = 'kind';
      throw e;
    }
    return new C(this, name, undefined, true);
  }
}

module.exports = {
  Region, RegionCircuitBreaker, RegionKeyedBreakers, RegionBulkhead, RegionLimiter, RegionAdmission, RegionRetryBudget,
  RegionHedging, RegionLatencyTracker, RegionAdaptiveThrottle, RegionBrownout,
  // a region budget's receipts are a RetryBudget's
  RegionPermit: native.RegionPermit, RegionRetryReceipt: native.RetryReceipt,
};
