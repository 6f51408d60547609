'use strict';
// Classifying a finished call into the call contract's outcome (docs/outcomes.md). Only
// the classification lives here; what an outcome does to each guard is core's table.

const native = require('./native');
const errors = require('./errors');

/** Outcome names by number, and numbers by name (the fast paths pass numbers). */
const NAMES = native.outcomeNames();
const NUM = Object.fromEntries(NAMES.map((n, i) => [n, i]));

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN', 'EHOSTUNREACH',
  'ENETUNREACH', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT', 'GUARDS_ATTEMPT_TIMEOUT', 'GUARDS_DEADLINE_EXCEEDED',
]);
/** Errors that are the caller's own bug: they say nothing about the dependency. */
const PROGRAMMING_ERRORS = [TypeError, ReferenceError, SyntaxError, RangeError, EvalError, URIError];

function statusOf(e) {
  const s = e && (e.status ?? e.statusCode ?? (e.response && e.response.status));
  return Number.isInteger(s) ? s : undefined;
}

function retryAfterOf(e) {
  if (e && typeof e.retryAfterMs === 'number' && e.retryAfterMs >= 0) return e.retryAfterMs;
  const h = e && ((e.headers && (typeof e.headers.get === 'function' ? e.headers.get('retry-after') : e.headers['retry-after']))
    || (e.response && e.response.headers && typeof e.response.headers.get === 'function' && e.response.headers.get('retry-after')));
  return typeof h === 'string' ? h : undefined;
}

/**
 * The outcome of an error thrown by a call: `{ outcome, retryAfterMs }`. Another guard's
 * refusal is `rejected`; a programming error (`TypeError`, `ReferenceError`, ...) is
 * `ignored`; an abort is `cancelled`; timeouts are `timeout`; transport errors
 * `connection_error`; an error carrying an HTTP status is classified by core's
 * `classifyHttp`; anything else is `other_transient`.
 */
function classifyError(e) {
  if (e instanceof errors.RejectedError) {
    if (e instanceof errors.DeadlineExceededError) return { outcome: 'timeout', retryAfterMs: null };
    return { outcome: 'rejected', retryAfterMs: null };
  }
  if (e && typeof e === 'object') {
    const code = e.code || (e.cause && e.cause.code);
    if (TIMEOUT_CODES.has(code) || e.name === 'TimeoutError') return { outcome: 'timeout', retryAfterMs: null };
    if (e.name === 'AbortError') return { outcome: 'cancelled', retryAfterMs: null };
    if (CONNECTION_CODES.has(code)) return { outcome: 'connection_error', retryAfterMs: null };
    const status = statusOf(e);
    if (status !== undefined) {
      const ra = retryAfterOf(e);
      if (typeof ra === 'number') {
        const c = native.classifyHttp(status, '0');
        return c.outcome === 'throttled' ? { outcome: 'throttled', retryAfterMs: ra } : { outcome: c.outcome, retryAfterMs: null };
      }
      return native.classifyHttp(status, ra);
    }
    if (e instanceof errors.AttemptTimeoutError) return { outcome: 'timeout', retryAfterMs: null };
    if (PROGRAMMING_ERRORS.some((C) => e instanceof C)) return { outcome: 'ignored', retryAfterMs: null };
  }
  return { outcome: 'other_transient', retryAfterMs: null };
}

/** Apply a user's `classify` (returning an outcome name, `{ outcome, retryAfterMs }` or undefined). */
function classifyWith(classify, e) {
  if (classify) {
    const c = classify(e);
    if (typeof c === 'string') {
      if (!(c in NUM)) throw errors.badOption('TypeError', 'classify', `classify returned ${JSON.stringify(c)}, not an outcome (${NAMES.join(', ')})`);
      return { outcome: c, retryAfterMs: null };
    }
    if (c && typeof c === 'object' && c.outcome in NUM) return { outcome: c.outcome, retryAfterMs: c.retryAfterMs ?? null };
  }
  return classifyError(e);
}

/** The refusal kind (for a brownout) of an error, or null when it never gets a fallback. */
function refusalKindOf(e) {
  if (e instanceof errors.BreakerOpenError || e instanceof errors.BreakersFullError) return 'breaker_open';
  if (e instanceof errors.BulkheadFullError) return 'bulkhead_full';
  if (e instanceof errors.BudgetExhaustedError) return 'budget_exhausted';
  if (e instanceof errors.DeadlineExceededError) return 'timeout';
  if (e instanceof errors.RetriesExhaustedError) return 'failed';
  if (e instanceof errors.RejectedError) return 'throttled';
  return native.Brownout.kindOf(classifyError(e).outcome);
}

module.exports = { NAMES, NUM, classifyError, classifyWith, refusalKindOf, PROGRAMMING_ERRORS };
