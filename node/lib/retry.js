'use strict';
// retry(fn, options): the retry loop on core's RetryDriver. This file only sleeps, calls,
// times attempts out and classifies; the driver decides every step.
//
// A `Retry` plan keeps its drivers in a native pool (`RetryDrivers`) by slot number and
// drives them through fast functions: no native object is built per call. A plan without
// a deadline, a time limit, an attempt timeout or a budget starts nothing before the
// first attempt (without those, `start` decides nothing): the attempt runs at once and
// one native call (`settle`) starts the driver and reports the attempt together, so a
// first-attempt success costs one native call.
//
// Step codes of the fast functions (node/src/retry_driver.rs): >= 0 an attempt's budget
// in ms; -1 gave up (the reason from `_reason(slot)`); -2 succeeded; <= -3 wait
// `-code - 3` ms.

const { EventEmitter } = require('node:events');
const native = require('./native');
const errors = require('./errors');
const { NUM, classifyWith } = require('./outcome');
const { fastOf, ioOf, ioCall } = require('./guards');

const POLICY_KEYS = new Set([
  'maxAttempts', 'retryTimeouts', 'retryConnectionErrors', 'retryOtherTransient',
  'retryThrottled', 'honorRetryAfter', 'maxRetryAfter', 'minAttemptTime',
  'unkeyedSideEffects', 'backoff', 'seed',
]);
const OWN_KEYS = new Set([
  'policy', 'budget', 'timeoutMs', 'deadline', 'attemptTimeoutMs', 'marginMs',
  'idempotency', 'classify', 'classifyResult', 'onRetry', 'signal', 'name',
]);
const SUCCESS = NUM.success;
const TIMEOUT = NUM.timeout;
const GAVE_UP = -1;
const SUCCEEDED = -2;

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) { reject(signal.reason); return; }
    const onAbort = () => { clearTimeout(timer); reject(signal.reason); };
    const timer = setTimeout(() => {
      if (signal) signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
  });
}

function giveUpError(reason, attempts, cause) {
  const msg = `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${reason}`;
  let e;
  switch (reason) {
    case 'deadline_exceeded': e = new errors.DeadlineExceededError(msg, { cause }); break;
    case 'budget_exhausted': e = new errors.BudgetExhaustedError(msg, { cause }); break;
    default: e = new errors.RetriesExhaustedError(msg, { cause });
  }
  e.reason = reason;
  e.attempts = attempts;
  return e;
}

function isThenable(p) {
  return p !== null && typeof p === 'object' && typeof p.then === 'function';
}

/**
 * A retry plan, built once and shared: `new Retry(options).execute(fn)`. `fn` gets
 * `{ signal, attempt, budgetMs }` and may return a promise or a value.
 */
class Retry extends EventEmitter {
  #policy; #budget; #classify; #classifyResult; #onRetry; #timed;
  #drivers; #settle; #begin; #report; #resume; #quick; #quickInfo;
  /** `#settleIo` is `settle` reading its arguments from `#io` (see `ioOf` in guards.js). */
  #io; #settleIo;
  #free = []; #slots = 0;
  #stats = { calls: 0, attempts: 0, retries: 0, successes: 0, failures: 0, attemptTimeouts: 0, cancelled: 0 };

  constructor(options = {}) {
    super();
    if (options === null || typeof options !== 'object') {
      throw errors.badOption('TypeError', 'options', 'retry: options must be an object');
    }
    const policyOptions = {};
    for (const [k, v] of Object.entries(options)) {
      if (POLICY_KEYS.has(k)) policyOptions[k] = v;
      else if (!OWN_KEYS.has(k)) {
        throw errors.badOption('TypeError', k, `retry: unknown option \`${k}\` (valid options: ${[...POLICY_KEYS, ...OWN_KEYS].join(', ')})`);
      }
    }
    if (options.policy !== undefined) {
      if (!(options.policy instanceof native.RetryPolicy)) throw errors.badOption('TypeError', 'policy', 'retry: `policy` must be a RetryPolicy');
      if (Object.keys(policyOptions).length) throw errors.badOption('TypeError', 'policy', 'retry: give either `policy` or its options, not both');
      this.#policy = options.policy;
    } else {
      this.#policy = new native.RetryPolicy(policyOptions);
    }
    if (options.budget !== undefined && !(options.budget instanceof native.RetryBudget)) {
      throw errors.badOption('TypeError', 'budget', 'retry: `budget` must be a RetryBudget');
    }
    for (const k of ['classify', 'classifyResult', 'onRetry']) {
      if (options[k] !== undefined && typeof options[k] !== 'function') throw errors.badOption('TypeError', k, `retry: \`${k}\` must be a function`);
    }
    if (options.signal !== undefined) {
      throw errors.badOption('TypeError', 'signal', 'new Retry(options): `signal` belongs to one call: pass it to execute(fn, { signal })');
    }
    this.#budget = options.budget;
    this.#classify = options.classify;
    this.#classifyResult = options.classifyResult;
    this.#onRetry = options.onRetry;
    const d = {};
    for (const k of ['timeoutMs', 'deadline', 'attemptTimeoutMs', 'marginMs', 'idempotency']) {
      if (options[k] !== undefined) d[k] = options[k];
    }
    if (this.#budget) d.budget = this.#budget;
    // Validates the driver options now (a bad one throws here, naming it).
    this.#drivers = new native.RetryDrivers(this.#policy, d);
    const f = fastOf(this.#drivers);
    this.#settle = f.settle;
    this.#io = ioOf(f);
    this.#settleIo = ioCall(f, 'settle', 3, this.#io);
    this.#begin = f.begin;
    this.#report = f.report;
    this.#resume = f.resume;
    this.#timed = d.timeoutMs !== undefined || d.deadline !== undefined || d.attemptTimeoutMs !== undefined;
    this.#quick = this.#drivers.settles && !this.#timed;
    if (this.#quick) {
      this.#quickInfo = Object.freeze({ signal: undefined, attempt: 1, budgetMs: this.#drivers.firstBudgetMs });
    }
  }

  /** The native policy. */
  get policy() { return this.#policy; }
  /** The budget (if any). */
  get budget() { return this.#budget; }
  /** Counters of this plan's calls. */
  stats() { return { ...this.#stats, policy: this.#policy.stats() }; }

  #take() { return this.#free.length > 0 ? this.#free.pop() : this.#slots++; }
  #give(slot) { this.#free.push(slot); }

  /**
   * Run `fn` with retries. `options.signal` cancels everything (the attempt out is aborted
   * and the wait stopped); `options.deadline` / `options.timeoutMs` narrow the plan's.
   */
  execute(fn, options) {
    if (typeof fn !== 'function') return Promise.reject(errors.badOption('TypeError', 'fn', 'retry: fn must be a function'));
    if (options === undefined && this.#quick) return this.#first(fn);
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      return Promise.reject(errors.badOption('TypeError', 'options', 'execute(fn, options): options must be an object'));
    }
    const signal = options ? options.signal : undefined;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      return Promise.reject(errors.badOption('TypeError', 'signal', 'execute: `signal` must be an AbortSignal'));
    }
    const narrowed = options !== undefined && (options.deadline !== undefined || options.timeoutMs !== undefined);
    if (!narrowed && signal === undefined && this.#quick) return this.#first(fn);
    return this.#loop(fn, signal, narrowed ? options : undefined);
  }

  /** A plan that settles: the first attempt at once, then one native call. */
  #first(fn) {
    const st = this.#stats;
    st.calls++;
    st.attempts++;
    let p;
    try {
      p = fn(this.#quickInfo);
    } catch (e) {
      return this.#afterFirst(fn, undefined, e, true);
    }
    if (!isThenable(p)) return this.#afterFirst(fn, p, undefined, false);
    return p.then(
      (v) => this.#afterFirst(fn, v, undefined, false),
      (e) => this.#afterFirst(fn, undefined, e, true),
    );
  }

  #afterFirst(fn, value, err, failed) {
    let outcome = 'success';
    let r;
    const slot = this.#free.length > 0 ? this.#free[this.#free.length - 1] : this.#slots;
    if (!failed && this.#classifyResult === undefined) {
      const io = this.#io;
      io[0] = slot;
      io[1] = SUCCESS;
      io[2] = -1;
      r = this.#settleIo();
    } else {
      let ra;
      [outcome, ra] = this.#classified(value, err, failed, false);
      r = this.#settle(slot, NUM[outcome], ra);
    }
    if (r === SUCCEEDED) {
      this.#stats.successes++;
      return failed ? Promise.reject(err) : value;
    }
    // the driver went on in `slot`: it is taken now
    if (this.#take() !== slot) throw new errors.InternalError('retry: slot bookkeeping');
    return this.#continue(fn, slot, r, 1, value, err, failed, outcome, undefined);
  }

  /** `[outcome, retryAfterMs]` of an attempt that gave `value` or threw `err`. */
  #classified(value, err, failed, timedOut) {
    if (!failed) {
      if (this.#classifyResult === undefined) return ['success', -1];
      const c = this.#classifyResult(value);
      return [c ? c.outcome : 'success', c && c.retryAfterMs != null ? c.retryAfterMs : -1];
    }
    if (timedOut) return ['timeout', -1];
    const c = classifyWith(this.#classify, err);
    return [c.outcome, c.retryAfterMs != null ? c.retryAfterMs : -1];
  }

  /** The general loop: begin (the driver starts before the first attempt), attempts. */
  async #loop(fn, signal, narrowed) {
    const st = this.#stats;
    st.calls++;
    if (signal && signal.aborted) { st.cancelled++; throw signal.reason; }
    const slot = this.#take();
    let r;
    try {
      r = narrowed === undefined
        ? this.#begin(slot)
        : this.#drivers._beginWith(slot, narrowed.deadline ?? null, narrowed.timeoutMs ?? null);
    } catch (e) {
      this.#give(slot);
      throw e;
    }
    if (r === GAVE_UP) {
      const reason = this.#drivers._reason(slot);
      this.#give(slot);
      throw giveUpError(reason, 0, undefined);
    }
    return this.#continue(fn, slot, r, 0, undefined, undefined, false, undefined, signal, undefined);
  }

  /**
   * Go on from step code `r` of the driver in `slot` (`attempts` made so far; the last
   * one gave `value` or threw `err`) until the driver says succeeded or give up.
   */
  async #continue(fn, slot, r, attempts, value, err, failed, outcome, signal) {
    const st = this.#stats;
    const timed = this.#timed;
    try {
      for (;;) {
        if (r <= -3) {
          // wait, then resume (a timer may fire a little before the monotonic clock
          // reaches the instant: then wait out the rest)
          let waitMs = -r - 3;
          st.retries++;
          const info = { attempt: attempts, outcome, error: err, value, delayMs: waitMs, retry: this };
          if (this.#onRetry) this.#onRetry(info);
          if (this.listenerCount('retry')) this.emit('retry', info);
          for (;;) {
            try {
              await sleep(waitMs, signal);
            } catch (e) {
              this.#drivers._cancel(slot);
              st.cancelled++;
              throw e;
            }
            r = this.#resume(slot);
            if (r > -3) break;
            waitMs = Math.max(1, -r - 3);
          }
        }
        if (r === SUCCEEDED) {
          st.successes++;
          return value;
        }
        if (r === GAVE_UP) {
          const reason = this.#drivers._reason(slot);
          const made = this.#drivers._attempts(slot);
          if (this.listenerCount('giveUp')) this.emit('giveUp', { reason, attempts: made, error: err, outcome, retry: this });
          st.failures++;
          // the policy gave up on a result the caller classified as a failure: return it
          if (!failed) return value;
          switch (reason) {
            case 'attempts_exhausted':
            case 'retry_after_too_long':
            case 'deadline_exceeded':
            case 'budget_exhausted':
              throw giveUpError(reason, made, err);
            default:
              throw err;
          }
        }
        // r >= 0: make an attempt with budget r
        attempts++;
        st.attempts++;
        failed = false;
        err = undefined;
        value = undefined;
        let timedOut = false;
        try {
          if (!timed && signal === undefined) {
            value = await fn({ signal: undefined, attempt: attempts, budgetMs: r });
          } else {
            value = await this.#attempt(fn, new AbortController(), signal, attempts, r, timed);
          }
        } catch (e) {
          failed = true;
          err = e;
          if (e && e.code === 'GUARDS_ATTEMPT_TIMEOUT') { timedOut = true; st.attemptTimeouts++; }
        }
        if (failed && signal && signal.aborted) {
          this.#drivers._cancel(slot);
          st.cancelled++;
          throw signal.reason;
        }
        let ra;
        [outcome, ra] = this.#classified(value, err, failed, timedOut);
        r = this.#report(slot, timedOut ? TIMEOUT : NUM[outcome], ra);
        if (r === SUCCEEDED && failed) {
          // the caller's classify called a thrown error a success: it is still thrown
          st.successes++;
          throw err;
        }
      }
    } finally {
      this.#give(slot);
    }
  }

  #attempt(fn, ac, signal, attempt, budgetMs, timed) {
    return new Promise((resolve, reject) => {
      let timer = null;
      let settled = false;
      const finish = (f, v) => {
        if (settled) return;
        settled = true;
        if (timer !== null) clearTimeout(timer);
        if (signal) signal.removeEventListener('abort', onAbort);
        f(v);
      };
      const onAbort = () => {
        ac.abort(signal.reason);
        finish(reject, signal.reason);
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      if (timed && Number.isFinite(budgetMs)) {
        timer = setTimeout(() => {
          const e = new errors.AttemptTimeoutError(`attempt ${attempt} timed out after ${budgetMs} ms`);
          ac.abort(e);
          finish(reject, e);
        }, Math.max(0, budgetMs));
      }
      let p;
      try {
        p = fn({ signal: ac.signal, attempt, budgetMs });
      } catch (e) {
        finish(reject, e);
        return;
      }
      Promise.resolve(p).then((v) => finish(resolve, v), (e) => finish(reject, e));
    });
  }
}

/** Run `fn` with retries (a one-off `Retry`). */
function retry(fn, options) {
  const { signal, ...rest } = options || {};
  return new Retry(rest).execute(fn, signal === undefined ? undefined : { signal });
}

module.exports = { Retry, retry, sleep };
