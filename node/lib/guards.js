'use strict';
// The native guards, subclassed: promise-returning `execute`, events, and placement in a
// SharedArrayBuffer for worker threads. Every decision is the native guard's.
//
// Hot paths call the guard's fast functions (`_fast()`: plain Node-API functions bound to
// the guard, see node/src/fast.rs), kept in private fields: one native call to take a
// permit, one to report it.

const { EventEmitter } = require('node:events');
const native = require('./native');
const errors = require('./errors');
const { NUM, classifyWith } = require('./outcome');

const CHANGED = native.FAST_CHANGED;
const SUCCESS = NUM.success;
const EVENTS_WORD = native.SHARED_EVENTS_WORD;
const STATES = ['closed', 'open', 'half_open'];
/** How often (ms) an idle cross-thread watcher checks that it still has listeners. */
const WATCH_RECHECK_MS = 1000;

const FAST = Symbol('guards.fast');

/** The fast functions of native guard `g` (made once per object). */
function fastOf(g) {
  let f = g[FAST];
  if (f === undefined) {
    f = g._fast();
    Object.defineProperty(g, FAST, { value: f });
  }
  return f;
}

/**
 * The `io` cells of fast functions `f`: the arguments of a fast function called with none
 * (see `Io` in node/src/fast.rs: reading a Node-API argument costs a third of a native
 * call). Where Node-API gives no `io` (no buffer over outside memory), plain cells that
 * `ioCall` passes as arguments.
 */
function ioOf(f) {
  return f.io instanceof Int32Array ? f.io : new Int32Array(4);
}

/** Fast function `name` of `f`, called with no arguments: it reads its `n` from `io`. */
function ioCall(f, name, n, io) {
  const fn = f[name];
  if (f.io === io) return fn;
  if (n === 1) return () => fn(io[0]);
  if (n === 2) return () => fn(io[0], io[1]);
  return () => fn(io[0], io[1], io[2]);
}

/**
 * Events: an EventEmitter per guard, created on first use. For a guard in a
 * SharedArrayBuffer, a thread that sees the guard change bumps the buffer's event word and
 * wakes the others (`Atomics.notify`); each thread with listeners for `watched` events
 * waits on the word (`Atomics.waitAsync`, which keeps no thread alive) and, woken, emits
 * what changed as it sees it (`_poll`). So every thread sharing the guard hears every
 * change, from its own event loop.
 */
function withEvents(Base, watched = []) {
  return class extends Base {
    #emitter = null;
    #watching = false;
    get events() { return this.#emitter || (this.#emitter = new EventEmitter()); }
    /** Listen to `event` ('stateChange', 'limitChange', ...). */
    on(event, listener) { this.events.on(event, listener); this.#watch(event); return this; }
    /** Listen once. */
    once(event, listener) { this.events.once(event, listener); this.#watch(event); return this; }
    /** Stop listening. */
    off(event, listener) { if (this.#emitter) this.#emitter.off(event, listener); return this; }
    /** @internal */
    _emit(event, payload) {
      const em = this.#emitter;
      if (!em || em.listenerCount(event) === 0) return;
      try { em.emit(event, payload); } catch (err) { process.emitWarning(err); }
    }
    /** @internal This thread saw the guard change: wake the other threads sharing it. */
    _notify() {
      const mem = this.sharedMemory;
      if (mem === undefined) return;
      const w = new Int32Array(mem, 0, 8);
      Atomics.add(w, EVENTS_WORD, 1);
      Atomics.notify(w, EVENTS_WORD);
    }
    #listening() {
      const em = this.#emitter;
      return em !== null && watched.some((e) => em.listenerCount(e) > 0);
    }
    #watch(event) {
      if (this.#watching || !watched.includes(event) || this.sharedMemory === undefined) return;
      this.#watching = true;
      const w = new Int32Array(this.sharedMemory, 0, 8);
      const loop = async () => {
        try {
          while (this.#listening()) {
            const seen = Atomics.load(w, EVENTS_WORD);
            this._poll();
            const r = Atomics.waitAsync(w, EVENTS_WORD, seen, WATCH_RECHECK_MS);
            if (r.async) await r.value;
          }
        } catch (err) {
          process.emitWarning(err);
        } finally {
          this.#watching = false;
        }
      };
      loop();
    }
  };
}

/** Placement in a SharedArrayBuffer: `Guard.shared(options)`, `Guard.fromShared(buffer)`. */
function withSharing(Base, Native) {
  return class extends Base {
    #buffer;
    constructor(options, shared) {
      super(options, shared);
      this.#buffer = shared ? shared.buffer : undefined;
    }
    /** A guard built in a new SharedArrayBuffer (`sharedMemory`): post it to workers. */
    static shared(options) {
      const size = Native.sharedSize(options);
      return new this(options ?? {}, new Uint8Array(new SharedArrayBuffer(size)));
    }
    /** The guard another thread built in `buffer` (its `sharedMemory`). */
    static fromShared(buffer) {
      if (!(buffer instanceof SharedArrayBuffer)) {
        throw errors.badOption('TypeError', 'buffer', 'fromShared(buffer): buffer must be a SharedArrayBuffer (a guard\'s sharedMemory)');
      }
      return new this(undefined, new Uint8Array(buffer));
    }
    /** The SharedArrayBuffer the guard lives in (undefined unless built by `shared`). */
    get sharedMemory() { return this.#buffer; }
  };
}

function outcomeOf(classify, err) {
  return NUM[classifyWith(classify, err).outcome];
}

/**
 * Run `fn` between a fast-path acquire (token `t`) and `done(t, outcome number)`: a value
 * or a promise; a synchronous throw is reported and becomes a rejection.
 */
function run(fn, t, done, classify) {
  let p;
  try {
    p = fn();
  } catch (err) {
    done(t, outcomeOf(classify, err));
    return Promise.reject(err);
  }
  if (p === null || typeof p !== 'object' || typeof p.then !== 'function') {
    done(t, SUCCESS);
    return Promise.resolve(p);
  }
  return p.then(
    (v) => { done(t, SUCCESS); return v; },
    (err) => { done(t, outcomeOf(classify, err)); throw err; },
  );
}

function checkFn(fn) {
  if (typeof fn !== 'function') throw errors.badOption('TypeError', 'fn', `execute(fn): fn must be a function, not ${fn === null ? 'null' : typeof fn}`);
}

function classifyOption(options) {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') throw errors.badOption('TypeError', 'options', 'execute(fn, options): options must be an object');
  const c = options.classify;
  if (c !== undefined && typeof c !== 'function') throw errors.badOption('TypeError', 'classify', 'execute: `classify` must be a function');
  return c;
}

/** The mirror of a breaker that has none (Node-API refused a buffer over its memory). */
const NO_MIRROR = new Int32Array([-1]);

class CircuitBreaker extends withSharing(withEvents(native.CircuitBreaker, ['stateChange']), native.CircuitBreaker) {
  /** `#report` and `#reportIn` read their arguments from `#io` (see `ioOf`). */
  #acquire; #report; #reportIn; #io;
  /**
   * The closed generation `execute` may admit a call in without asking the breaker, or
   * -1 (an `Int32Array` over the native breaker's cell, kept exact by it: see `Mirror` in
   * node/src/circuit_breaker.rs). Such a call is reported once, with its generation.
   */
  #mirror;
  #state;
  /** Calls admitted through the mirror and not reported yet (part of `outstanding`). */
  #inFlight = 0;
  /** The handlers of a call admitted through the mirror in generation `#handlersGen`. */
  #handlersGen = -1;
  #onValue = null;
  #onError = null;

  constructor(options, shared) {
    super(options, shared);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#io = ioOf(f);
    this.#report = ioCall(f, 'report', 2, this.#io);
    this.#reportIn = ioCall(f, 'reportIn', 1, this.#io);
    this.#mirror = f.mirror instanceof Int32Array ? f.mirror : NO_MIRROR;
    this.#state = this.status().state;
  }

  /** Permits handed out by `execute` (and `guarded`) and not reported yet. */
  get outstanding() { return super.outstanding + this.#inFlight; }

  #changed(to) {
    this.#emitState(to ?? this.status().state);
    this._notify();
  }

  #emitState(to) {
    if (to === this.#state) return;
    const from = this.#state;
    this.#state = to;
    this._emit('stateChange', { from, to, breaker: this });
  }

  /** @internal Woken by another thread: emit what changed. */
  _poll() {
    this._sync();
    this.#emitState(this.status().state);
  }

  /** Report the permit of token `t` with outcome number `outcome`. */
  #done(t, outcome) {
    const io = this.#io;
    io[0] = t;
    io[1] = outcome;
    const r = this.#report();
    if (r >= CHANGED) this.#changed(STATES[r - CHANGED]);
  }

  /** Report a call admitted through the mirror in generation `gen` (`reportIn` takes both). */
  #doneIn(gen, outcome) {
    this.#io[0] = gen * 256 + outcome;
    const r = this.#reportIn();
    if (r >= CHANGED) this.#changed(STATES[r - CHANGED]);
  }

  /**
   * Run `fn` (returning a promise or a value) through the breaker: a refusal rejects with
   * `BreakerOpenError` without calling it; its result or error is reported (an error is
   * classified: another guard's refusal and programming errors are not failures).
   */
  execute(fn, options) {
    if (typeof fn !== 'function') checkFn(fn);
    const classify = options === undefined ? undefined : classifyOption(options);
    const gen = this.#mirror[0];
    if (gen >= 0) return this.#executeIn(gen, fn, classify);
    let t = this.#acquire();
    if (t < 0) return Promise.reject(this.#refusal(t));
    if (t >= CHANGED) { t -= CHANGED; this.#changed(); }
    // `run`, written out: this call site sees only this class's closures
    let p;
    try {
      p = fn();
    } catch (err) {
      this.#done(t, outcomeOf(classify, err));
      return Promise.reject(err);
    }
    if (p === null || typeof p !== 'object' || typeof p.then !== 'function') {
      this.#done(t, SUCCESS);
      return Promise.resolve(p);
    }
    return p.then(
      (v) => { this.#done(t, SUCCESS); return v; },
      (err) => { this.#done(t, outcomeOf(classify, err)); throw err; },
    );
  }

  /**
   * `execute` of a call the mirror admits in closed generation `gen` (what the breaker
   * would have answered, with a permit that is the generation alone): one native call,
   * the report, and without `classify` the handlers made once per generation.
   */
  #executeIn(gen, fn, classify) {
    let p;
    try {
      p = fn();
    } catch (err) {
      this.#doneIn(gen, outcomeOf(classify, err));
      return Promise.reject(err);
    }
    if (p === null || typeof p !== 'object' || typeof p.then !== 'function') {
      this.#doneIn(gen, SUCCESS);
      return Promise.resolve(p);
    }
    this.#inFlight++;
    if (classify !== undefined) {
      return p.then(
        (v) => { this.#inFlight--; this.#doneIn(gen, SUCCESS); return v; },
        (err) => { this.#inFlight--; this.#doneIn(gen, outcomeOf(classify, err)); throw err; },
      );
    }
    if (gen !== this.#handlersGen) this.#handlersIn(gen);
    return p.then(this.#onValue, this.#onError);
  }

  #handlersIn(gen) {
    this.#handlersGen = gen;
    const success = gen * 256 + SUCCESS;
    this.#onValue = (v) => {
      this.#inFlight--;
      this.#io[0] = success;
      const r = this.#reportIn();
      if (r >= CHANGED) this.#changed(STATES[r - CHANGED]);
      return v;
    };
    this.#onError = (err) => { this.#inFlight--; this.#doneIn(gen, outcomeOf(undefined, err)); throw err; };
  }

  /** @internal For `guarded`: take a permit (or throw the refusal); returns its report. */
  _guard() {
    let t = this.#acquire();
    if (t < 0) throw this.#refusal(t);
    if (t >= CHANGED) { t -= CHANGED; this.#changed(); }
    return (o) => this.#done(t, o);
  }

  #refusal(t) {
    if (t === -3) return new errors.InternalError('no permit slot');
    try { this._lastRejection(); } catch (e) { return e; }
    return new errors.BreakerOpenError('the circuit breaker is open');
  }
}

class KeyedBreakers extends withSharing(withEvents(native.KeyedBreakers, ['stateChange']), native.KeyedBreakers) {
  #acquire; #report;
  /** Key strings by key (bigint), for events heard from other threads. */
  #names = new Map();

  constructor(options, shared) {
    super(options, shared);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#report = f.report;
  }

  #changed(key) {
    const keyId = native.KeyedBreakers.keyOf(key);
    if (this.#names.size < 1024) this.#names.set(keyId, key);
    this._emit('stateChange', { key, keyId, to: this.state(key), breakers: this });
    this._notify();
  }

  /** @internal Woken by another thread: emit what changed. */
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
    if (t < 0) {
      try { this._lastRejection(key); } catch (e) { return Promise.reject(e); }
      return Promise.reject(new errors.BreakerOpenError(`the circuit breaker for ${key} refused`));
    }
    if (t >= CHANGED) { t -= CHANGED; this.#changed(key); }
    return run(fn, t, (tok, outcome) => {
      if (this.#report(tok, outcome) >= CHANGED) this.#changed(key);
    }, classify);
  }

  /** @internal For `guarded`: take a permit for `opts.key` (or throw); returns its report. */
  _guard(opts) {
    const key = opts.key;
    let t = this.#acquire(key);
    if (t < 0) {
      this._lastRejection(key);
      throw new errors.BreakerOpenError(`the circuit breaker for ${key} refused`);
    }
    if (t >= CHANGED) { t -= CHANGED; this.#changed(key); }
    return (o) => { if (this.#report(t, o) >= CHANGED) this.#changed(key); };
  }
}

class Bulkhead extends withSharing(withEvents(native.Bulkhead), native.Bulkhead) {
  #acquire; #release;
  /** `execute`'s permits, held by count (no token): its handlers are made once. */
  #acquireCounted; #releaseCounted;
  #onValue = (v) => { this.#releaseCounted(); return v; };
  #onError = (err) => { this.#releaseCounted(); throw err; };

  constructor(options, shared) {
    super(options, shared);
    const f = fastOf(this);
    this.#acquire = f.acquire;
    this.#release = f.release;
    this.#acquireCounted = f.acquireCounted;
    this.#releaseCounted = f.releaseCounted;
  }

  /** Run `fn` holding a slot; `BulkheadFullError` at the cap, without calling it. */
  execute(fn) {
    if (typeof fn !== 'function') checkFn(fn);
    if (this.#acquireCounted() < 0) {
      try { this._lastRejection(); } catch (e) { return Promise.reject(e); }
      return Promise.reject(new errors.BulkheadFullError('the bulkhead is full'));
    }
    // `run`, written out: this call site sees only this class's handlers
    let p;
    try {
      p = fn();
    } catch (err) {
      this.#releaseCounted();
      return Promise.reject(err);
    }
    if (p === null || typeof p !== 'object' || typeof p.then !== 'function') {
      this.#releaseCounted();
      return Promise.resolve(p);
    }
    return p.then(this.#onValue, this.#onError);
  }

  /** @internal For `guarded`: take a slot (or throw); returns its release. */
  _guard() {
    const t = this.#acquire();
    if (t < 0) {
      this._lastRejection();
      throw new errors.BulkheadFullError('the bulkhead is full');
    }
    return () => { this.#release(t); };
  }

  /** @internal */
  _poll() {}
}

class Limiter extends withSharing(withEvents(native.Limiter, ['limitChange']), native.Limiter) {
  /** `#acquire` (at the default priority) and `#report` read their arguments from `#io`. */
  #acquire; #acquireAt; #report; #io;
  #limit;

  constructor(options, shared) {
    super(options, shared);
    const f = fastOf(this);
    this.#io = ioOf(f);
    this.#acquire = ioCall(f, 'acquire', 1, this.#io);
    this.#acquireAt = f.acquire;
    this.#report = ioCall(f, 'report', 2, this.#io);
    this.#limit = this.limit;
  }

  #emitLimit(l) {
    if (l === this.#limit) return;
    const from = this.#limit;
    this.#limit = l;
    this._emit('limitChange', { from, to: l, limiter: this });
  }

  /** @internal Woken by another thread: emit what changed. */
  _poll() { this.#emitLimit(this.limit); }

  /** A permit token at `priority` (default 0; any other value is the native's to judge). */
  #take(priority) {
    if (priority === undefined || priority === 0) {
      this.#io[0] = 0;
      return this.#acquire();
    }
    return this.#acquireAt(priority);
  }

  /** Report the permit of token `t` with outcome number `outcome`. */
  #done(t, outcome) {
    const io = this.#io;
    io[0] = t;
    io[1] = outcome;
    const l = this.#report();
    if (l >= 0 && l !== this.#limit) { this.#emitLimit(l); this._notify(); }
  }

  /** Run `fn` under the limit (`options.priority`, 0..7); `LimitExceededError` when refused. */
  execute(fn, options) {
    if (typeof fn !== 'function') checkFn(fn);
    const classify = options === undefined ? undefined : classifyOption(options);
    const t = this.#take(options === undefined ? undefined : options.priority);
    if (t < 0) {
      try { this._lastRejection(); } catch (e) { return Promise.reject(e); }
      return Promise.reject(new errors.LimitExceededError('the limiter refused the call'));
    }
    // `run`, written out: this call site sees only this class's closures
    let r;
    try {
      r = fn();
    } catch (err) {
      this.#done(t, outcomeOf(classify, err));
      return Promise.reject(err);
    }
    if (r === null || typeof r !== 'object' || typeof r.then !== 'function') {
      this.#done(t, SUCCESS);
      return Promise.resolve(r);
    }
    return r.then(
      (v) => { this.#done(t, SUCCESS); return v; },
      (err) => { this.#done(t, outcomeOf(classify, err)); throw err; },
    );
  }

  /** @internal For `guarded`: take a permit at `opts.priority` (or throw); returns its report. */
  _guard(opts) {
    const t = this.#take(opts.priority);
    if (t < 0) {
      this._lastRejection();
      throw new errors.LimitExceededError('the limiter refused the call');
    }
    return (o) => this.#done(t, o);
  }
}

class Admission extends withSharing(withEvents(native.Admission, ['limitChange']), native.Admission) {
  #limit = this.limit;

  /** @internal The middleware's report returned `l` (the limit, -2 without one). */
  _limitSeen(l) {
    const to = l === -2 ? null : l;
    if (l >= 0 && to !== this.#limit) { this.#emitLimit(to); this._notify(); }
  }

  #emitLimit(to) {
    if (to === this.#limit) return;
    const from = this.#limit;
    this.#limit = to;
    this._emit('limitChange', { from, to, admission: this });
  }

  /** @internal Woken by another thread: emit what changed. */
  _poll() { this.#emitLimit(this.limit); }
}

/** The sharing a class gets from the layer, for the native classes without an `execute`. */
class RetryBudget extends withSharing(native.RetryBudget, native.RetryBudget) {}
class RetryPolicy extends withSharing(native.RetryPolicy, native.RetryPolicy) {}
class Hedging extends withSharing(native.Hedging, native.Hedging) {}
class LatencyTracker extends withSharing(native.LatencyTracker, native.LatencyTracker) {}
class AdaptiveThrottle extends withSharing(native.AdaptiveThrottle, native.AdaptiveThrottle) {}
class Brownout extends withSharing(native.Brownout, native.Brownout) {}
class Backoff extends withSharing(native.Backoff, native.Backoff) {}

module.exports = {
  CircuitBreaker, KeyedBreakers, Bulkhead, Limiter, Admission, RetryBudget, RetryPolicy,
  Hedging, LatencyTracker, AdaptiveThrottle, Brownout, Backoff,
  withEvents, fastOf, ioOf, ioCall, CHANGED, run, checkFn,
};
