'use strict';
// guarded(guards, options): one call through several guards in the documented order,
// with a brownout fallback:
//
//   fallback (outermost: it sees the final outcome, after retries)
//     -> retry (options.retry: a Retry or its options)
//       -> timeoutMs (each try's own time limit)
//         -> the guards, in the order given (e.g. breaker, then bulkhead / limiter)
//           -> fn
//
// A guard's refusal gives back what the guards before it took. The fallback is served
// only for refusals and dependency failures, never for the caller's own errors
// (programming errors, 4xx, cancellations), and receives the error.

const { EventEmitter } = require('node:events');
const native = require('./native');
const errors = require('./errors');
const { NUM, classifyWith, refusalKindOf } = require('./outcome');
const { Retry } = require('./retry');
const { CHANGED, fastOf } = require('./guards');

const TIMEOUT = NUM.timeout;

function checkGuard(g, i) {
  const ok = g instanceof native.CircuitBreaker || g instanceof native.Bulkhead
    || g instanceof native.Limiter || g instanceof native.Admission
    || g instanceof native.KeyedBreakers || g instanceof native.AdaptiveThrottle
    || g instanceof native.RegionCircuitBreaker || g instanceof native.RegionKeyedBreakers
    || g instanceof native.RegionBulkhead
    || g instanceof native.RegionLimiter;
  if (!ok) throw errors.badOption('TypeError', `guards[${i}]`, `guarded: guards[${i}] is not a guard (CircuitBreaker, KeyedBreakers, Bulkhead, Limiter, Admission or AdaptiveThrottle)`);
}

/** Take guard `g` for one call: a function reporting the outcome number, or throws. */
function take(g, opts) {
  if (typeof g._guard === 'function') return g._guard(opts);
  if (g instanceof native.CircuitBreaker) {
    const f = fastOf(g);
    let t = f.acquire();
    if (t < 0) { g._lastRejection(); throw new errors.BreakerOpenError('the circuit breaker is open'); }
    if (t >= CHANGED) t -= CHANGED;
    return (o) => { f.report(t, o); };
  }
  if (g instanceof native.KeyedBreakers) {
    const key = opts.key;
    const f = fastOf(g);
    let t = f.acquire(key);
    if (t < 0) { g._lastRejection(key); throw new errors.BreakerOpenError(`the breaker for ${key} refused`); }
    if (t >= CHANGED) t -= CHANGED;
    return (o) => { f.report(t, o); };
  }
  if (g instanceof native.Bulkhead) {
    const f = fastOf(g);
    const t = f.acquire();
    if (t < 0) { g._lastRejection(); throw new errors.BulkheadFullError('the bulkhead is full'); }
    return () => { f.release(t); };
  }
  if (g instanceof native.Limiter) {
    const f = fastOf(g);
    const t = f.acquire(opts.priority ?? 0);
    if (t < 0) { g._lastRejection(); throw new errors.LimitExceededError('the limiter refused the call'); }
    return (o) => { f.report(t, o); };
  }
  if (g instanceof native.Admission) {
    const f = fastOf(g);
    const t = f.acquire(opts.priority ?? 1);
    if (t < 0) { g._lastRejection(); throw new errors.AdmissionRejectedError('admission refused the call'); }
    return (o) => { f.report(t, o); };
  }
  // AdaptiveThrottle: may refuse locally; told whether the backend accepted the call.
  if (g.shouldReject()) {
    const e = new errors.ThrottledError('the adaptive throttle refused the call locally');
    e.reason = 'throttled';
    throw e;
  }
  return (o) => { g.report(NAMES[o]); };
}
const NAMES = Object.keys(NUM).sort((a, b) => NUM[a] - NUM[b]);

class Guarded extends EventEmitter {
  #guards; #opts; #retry; #brownout; #fallback; #hasFallback; #timeoutMs; #classify;
  #stats = { calls: 0, full: 0, fallbacks: 0, errors: 0 };

  constructor(guards, options = {}) {
    super();
    if (!Array.isArray(guards)) throw errors.badOption('TypeError', 'guards', 'guarded: guards must be an array');
    guards.forEach(checkGuard);
    if (options === null || typeof options !== 'object') throw errors.badOption('TypeError', 'options', 'guarded: options must be an object');
    const known = ['fallback', 'brownout', 'retry', 'timeoutMs', 'priority', 'key', 'classify', 'name'];
    for (const k of Object.keys(options)) {
      if (!known.includes(k)) throw errors.badOption('TypeError', k, `guarded: unknown option \`${k}\` (valid options: ${known.join(', ')})`);
    }
    if (guards.some((g) => g instanceof native.KeyedBreakers) && typeof options.key !== 'string') {
      throw errors.badOption('TypeError', 'key', 'guarded: a KeyedBreakers set needs `key` (a string)');
    }
    if (options.priority !== undefined && !(Number.isInteger(options.priority) && options.priority >= 0 && options.priority <= 7)) {
      throw errors.badOption('RangeError', 'priority', 'guarded: `priority` must be a whole number in 0..=7');
    }
    if (options.timeoutMs !== undefined && !(typeof options.timeoutMs === 'number' && options.timeoutMs > 0 && Number.isFinite(options.timeoutMs))) {
      throw errors.badOption('RangeError', 'timeoutMs', 'guarded: `timeoutMs` must be a positive finite number of ms');
    }
    if (options.brownout !== undefined && !(options.brownout instanceof native.Brownout)) {
      throw errors.badOption('TypeError', 'brownout', 'guarded: `brownout` must be a Brownout');
    }
    this.#guards = guards;
    this.#opts = { priority: options.priority, key: options.key };
    this.#retry = options.retry === undefined ? null : (options.retry instanceof Retry ? options.retry : new Retry(options.retry));
    this.#hasFallback = 'fallback' in options;
    this.#fallback = options.fallback;
    this.#brownout = options.brownout || (this.#hasFallback ? new native.Brownout({ optional: true }) : null);
    this.#timeoutMs = options.timeoutMs;
    this.#classify = options.classify;
  }

  /** `{ calls, full, fallbacks, errors }`, and the brownout's counters. */
  stats() { return { ...this.#stats, brownout: this.#brownout ? this.#brownout.stats() : undefined }; }

  /** Run `fn` (given `{ signal, attempt }`) through the stack. */
  async execute(fn, options) {
    if (typeof fn !== 'function') throw errors.badOption('TypeError', 'fn', 'guarded: fn must be a function');
    this.#stats.calls++;
    try {
      const v = this.#retry
        ? await this.#retry.execute((a) => this.#once(fn, a), options)
        : await this.#once(fn, { signal: options && options.signal, attempt: 1 });
      if (this.#brownout) this.#brownout.onFull();
      this.#stats.full++;
      return v;
    } catch (err) {
      if (!this.#hasFallback && !this.#brownout) { this.#stats.errors++; throw err; }
      const kind = refusalKindOf(err);
      const decision = kind === null ? null : this.#brownout.onRefusal(kind);
      if (decision === 'serve_fallback' && this.#hasFallback) {
        this.#stats.fallbacks++;
        if (this.listenerCount('fallback')) this.emit('fallback', { served: true, kind, error: err });
        const fb = this.#fallback;
        return typeof fb === 'function' ? fb(err) : fb;
      }
      if (this.listenerCount('fallback')) this.emit('fallback', { served: false, kind, error: err });
      this.#stats.errors++;
      throw err;
    }
  }

  /** Wrap `fn`: a function taking the same arguments, run through the stack. */
  wrap(fn) {
    const self = this;
    return function guardedCall(...args) { return self.execute(() => fn.apply(this, args)); };
  }

  async #once(fn, attemptInfo) {
    const taken = [];
    try {
      for (const g of this.#guards) taken.push(take(g, this.#opts));
    } catch (err) {
      const rejected = NUM.rejected;
      for (const r of taken) r(rejected);
      throw err;
    }
    const classify = this.#classify;
    try {
      const v = this.#timeoutMs === undefined
        ? await fn(attemptInfo)
        : await withTimeout(fn, attemptInfo, this.#timeoutMs);
      for (const r of taken) r(NUM.success);
      return v;
    } catch (err) {
      const o = err && err.code === 'GUARDS_ATTEMPT_TIMEOUT' ? TIMEOUT : NUM[classifyWith(classify, err).outcome];
      for (const r of taken) r(o);
      throw err;
    }
  }
}

function withTimeout(fn, info, ms) {
  const ac = new AbortController();
  const outer = info && info.signal;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      const e = new errors.AttemptTimeoutError(`timed out after ${ms} ms`);
      ac.abort(e);
      reject(e);
    }, ms);
    const onAbort = () => { clearTimeout(timer); ac.abort(outer.reason); reject(outer.reason); };
    if (outer) outer.addEventListener('abort', onAbort, { once: true });
    Promise.resolve()
      .then(() => fn({ ...info, signal: ac.signal }))
      .then((v) => { clearTimeout(timer); if (outer) outer.removeEventListener('abort', onAbort); resolve(v); },
        (e) => { clearTimeout(timer); if (outer) outer.removeEventListener('abort', onAbort); reject(e); });
  });
}

/** A call stack of guards with options (see the top of this file). */
function guarded(guards, options) {
  return new Guarded(guards, options);
}

module.exports = { Guarded, guarded, take };
