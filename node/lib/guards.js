'use strict';
// The native guards, subclassed: promise-returning `execute`, events, and placement in a
// SharedArrayBuffer for worker threads. Every decision is the native guard's.

const { EventEmitter } = require('node:events');
const native = require('./native');
const errors = require('./errors');
const { NUM, classifyWith } = require('./outcome');

const CHANGED = 2 ** 52;
const SUCCESS = NUM.success;

/** Events: an EventEmitter per guard, created on first use. */
function withEvents(Base) {
  return class extends Base {
    #emitter = null;
    get events() { return this.#emitter || (this.#emitter = new EventEmitter()); }
    /** Listen to `event` ('stateChange', 'limitChange', ...). */
    on(event, listener) { this.events.on(event, listener); return this; }
    /** Listen once. */
    once(event, listener) { this.events.once(event, listener); return this; }
    /** Stop listening. */
    off(event, listener) { if (this.#emitter) this.#emitter.off(event, listener); return this; }
    /** @internal */
    _emit(event, payload) {
      const em = this.#emitter;
      if (!em || em.listenerCount(event) === 0) return;
      try { em.emit(event, payload); } catch (err) { process.emitWarning(err); }
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

/** Run `fn` between a fast-path acquire (token `t`) and `done(t, outcome number)`. */
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

class CircuitBreaker extends withSharing(withEvents(native.CircuitBreaker), native.CircuitBreaker) {
  #state = 'closed';
  #done = (t, outcome) => {
    const r = this._report(t, outcome);
    if (r >= CHANGED) this.#changed();
  };

  #changed() {
    const to = this.state();
    if (to !== this.#state) {
      const from = this.#state;
      this.#state = to;
      this._emit('stateChange', { from, to, breaker: this });
    }
  }

  /**
   * Run `fn` (returning a promise or a value) through the breaker: a refusal rejects with
   * `BreakerOpenError` without calling it; its result or error is reported (an error is
   * classified: another guard's refusal and programming errors are not failures).
   */
  execute(fn, options) {
    let t = this._acquire();
    if (t < 0) return Promise.reject(this.#refusal(t));
    if (t >= CHANGED) { t -= CHANGED; this.#changed(); }
    return run(fn, t, this.#done, options && options.classify);
  }

  #refusal(t) {
    if (t === -3) return new errors.InternalError('no permit slot');
    try { this._lastRejection(); } catch (e) { return e; }
    return new errors.BreakerOpenError('the circuit breaker is open');
  }
}

class KeyedBreakers extends withEvents(native.KeyedBreakers) {
  /** Run `fn` through the breaker of `key` (see `CircuitBreaker.execute`). */
  execute(key, fn, options) {
    let t = this._acquire(key);
    if (t < 0) {
      try { this._lastRejection(key); } catch (e) { return Promise.reject(e); }
      return Promise.reject(new errors.BreakerOpenError(`the circuit breaker for ${key} refused`));
    }
    if (t >= CHANGED) { t -= CHANGED; this._emit('stateChange', { key, to: this.state(key) }); }
    return run(fn, t, (tok, outcome) => {
      const r = this._report(tok, outcome);
      if (r >= CHANGED) this._emit('stateChange', { key, to: this.state(key) });
    }, options && options.classify);
  }
}

class Bulkhead extends withSharing(withEvents(native.Bulkhead), native.Bulkhead) {
  #release = (t) => { this._release(t); };
  /** Run `fn` holding a slot; `BulkheadFullError` at the cap, without calling it. */
  execute(fn) {
    const t = this._acquire();
    if (t < 0) {
      try { this._lastRejection(); } catch (e) { return Promise.reject(e); }
      return Promise.reject(new errors.BulkheadFullError('the bulkhead is full'));
    }
    return run(fn, t, this.#release);
  }
}

class Limiter extends withSharing(withEvents(native.Limiter), native.Limiter) {
  #limit = this.limit;
  #done = (t, outcome) => {
    const l = this._report(t, outcome);
    if (l >= 0 && l !== this.#limit) {
      const from = this.#limit;
      this.#limit = l;
      this._emit('limitChange', { from, to: l, limiter: this });
    }
  };
  /** Run `fn` under the limit (`options.priority`, 0..7); `LimitExceededError` when refused. */
  execute(fn, options) {
    const t = this._acquire(options && options.priority !== undefined ? options.priority : 0);
    if (t < 0) {
      try { this._lastRejection(); } catch (e) { return Promise.reject(e); }
    }
    return run(fn, t, this.#done, options && options.classify);
  }
}

class Admission extends withSharing(withEvents(native.Admission), native.Admission) {}
class RetryBudget extends withSharing(native.RetryBudget, native.RetryBudget) {}

module.exports = { CircuitBreaker, KeyedBreakers, Bulkhead, Limiter, Admission, RetryBudget, withEvents, CHANGED, run };
