'use strict';
// createFetch(options): fetch with a deadline header, a timeout per attempt, retries with
// backoff and a budget, Retry-After honoured, and a circuit breaker per host.

const native = require('./native');
const errors = require('./errors');
const { Retry } = require('./retry');
const { NUM } = require('./outcome');
const { CHANGED } = require('./guards');

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
const MILLIS_HEADER = 'x-envoy-expected-rq-timeout-ms';

function hostKey(url) {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    throw errors.badOption('TypeError', 'url', `fetch: not an absolute URL: ${String(url)}`);
  }
}

/**
 * A `fetch` with guards. Options: the retry options (`maxAttempts`, `backoff`,
 * `honorRetryAfter`, `maxRetryAfter`, ...), `budget` (default: one per client),
 * `breakers` (a `KeyedBreakers`, default: one per client, keyed by `scheme://host:port`;
 * `null` for none), `attemptTimeoutMs`, `timeoutMs` (the whole call), `deadlineHeader`
 * (`'grpc'`: `grpc-timeout`; `'millis'`: `x-envoy-expected-rq-timeout-ms`; `null`: none),
 * `fetch` (the underlying fetch, default `globalThis.fetch`).
 *
 * Responses are classified by status (core's `classifyHttp`): 5xx, 408 and 429 are
 * retried, a 503/429 `Retry-After` is honoured; when the policy gives up on a response,
 * that response is returned. Only idempotent methods are retried freely; POST and PATCH
 * need an `Idempotency-Key` header.
 */
function createFetch(options = {}) {
  if (options === null || typeof options !== 'object') throw errors.badOption('TypeError', 'options', 'createFetch: options must be an object');
  const { fetch: baseFetch = globalThis.fetch, breakers, deadlineHeader = 'grpc', budget, ...retryOptions } = options;
  if (typeof baseFetch !== 'function') throw errors.badOption('TypeError', 'fetch', 'createFetch: `fetch` must be a function');
  if (![null, 'grpc', 'millis'].includes(deadlineHeader)) throw errors.badOption('RangeError', 'deadlineHeader', "createFetch: `deadlineHeader` must be 'grpc', 'millis' or null");
  if (breakers !== undefined && breakers !== null && !(breakers instanceof native.KeyedBreakers)) {
    throw errors.badOption('TypeError', 'breakers', 'createFetch: `breakers` must be a KeyedBreakers or null');
  }
  const keyed = breakers === undefined ? new native.KeyedBreakers({ slots: 64 }) : breakers;
  const sharedBudget = budget === undefined ? new native.RetryBudget() : budget;
  const idem = new Retry({ ...retryOptions, budget: sharedBudget, idempotency: 'idempotent', classifyResult });
  const keyedSide = new Retry({ ...retryOptions, budget: sharedBudget, idempotency: 'keyed_side_effect', classifyResult });
  const unkeyed = new Retry({ ...retryOptions, budget: sharedBudget, idempotency: 'unkeyed_side_effect', classifyResult });

  async function guardedFetch(input, init = {}) {
    const url = typeof input === 'string' ? input : (input instanceof URL ? input.href : input.url);
    const key = hostKey(url);
    const method = String(init.method || (input && input.method) || 'GET').toUpperCase();
    const headers = new Headers(init.headers || (input && input.headers) || undefined);
    const plan = IDEMPOTENT.has(method) ? idem : (headers.has('idempotency-key') ? keyedSide : unkeyed);
    const callerSignal = init.signal || undefined;
    return plan.execute(async ({ signal, budgetMs }) => {
      let t = -1;
      if (keyed) {
        t = keyed._acquire(key);
        if (t < 0) { keyed._lastRejection(key); throw new errors.BreakerOpenError(`the breaker for ${key} refused`); }
        if (t >= CHANGED) t -= CHANGED;
      }
      const h = new Headers(headers);
      if (deadlineHeader !== null && Number.isFinite(budgetMs) && budgetMs < 86_400_000) {
        if (deadlineHeader === 'grpc') h.set('grpc-timeout', native.encodeGrpcTimeout(budgetMs));
        else h.set(MILLIS_HEADER, String(Math.floor(budgetMs)));
      }
      let res;
      try {
        res = await baseFetch(url, { ...init, method, headers: h, signal });
      } catch (err) {
        if (t >= 0) keyed._report(t, NUM[outcomeOfError(err, signal, callerSignal)]);
        throw err;
      }
      const c = native.classifyHttp(res.status, res.headers.get('retry-after') ?? undefined);
      if (t >= 0) keyed._report(t, NUM[c.outcome]);
      return res;
    }, { signal: callerSignal, timeoutMs: init.timeoutMs });
  }

  guardedFetch.breakers = keyed;
  guardedFetch.budget = sharedBudget;
  guardedFetch.stats = () => ({ idempotent: idem.stats(), keyed: keyedSide.stats(), unkeyed: unkeyed.stats() });
  return guardedFetch;
}

function outcomeOfError(err, attemptSignal, callerSignal) {
  if (callerSignal && callerSignal.aborted) return 'cancelled';
  if (attemptSignal && attemptSignal.aborted) return 'timeout';
  const { classifyError } = require('./outcome');
  return classifyError(err).outcome;
}

/** A response's outcome; a retried response's body is released first. */
function classifyResult(res) {
  const c = native.classifyHttp(res.status, res.headers.get('retry-after') ?? undefined);
  if (c.outcome === 'success' || c.outcome === 'permanent') return c;
  return c;
}

module.exports = { createFetch };
