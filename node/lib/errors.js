'use strict';
// Errors with stable codes. The native addon throws these too: it calls the factory
// installed below (once per thread: each worker thread loads its own copy of this module).

const native = require('./native');

/** Base class of every error guards throws, except bad options (TypeError / RangeError). */
class GuardsError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A guard refused the call before it was made (a decision, not a fault). */
class RejectedError extends GuardsError {}

function def(name, code, base = RejectedError) {
  const C = { [name]: class extends base {} }[name];
  Object.defineProperty(C.prototype, 'code', { value: code, writable: true, configurable: true });
  return C;
}

const BreakerOpenError = def('BreakerOpenError', 'GUARDS_BREAKER_OPEN');
const BreakersFullError = def('BreakersFullError', 'GUARDS_BREAKERS_FULL');
const BulkheadFullError = def('BulkheadFullError', 'GUARDS_BULKHEAD_FULL');
const LimitExceededError = def('LimitExceededError', 'GUARDS_LIMIT_EXCEEDED');
const AdmissionRejectedError = def('AdmissionRejectedError', 'GUARDS_ADMISSION_REJECTED');
const QueueFullError = def('QueueFullError', 'GUARDS_QUEUE_FULL');
const ThrottledError = def('ThrottledError', 'GUARDS_THROTTLED');
const BudgetExhaustedError = def('BudgetExhaustedError', 'GUARDS_BUDGET_EXHAUSTED');
const RetriesExhaustedError = def('RetriesExhaustedError', 'GUARDS_RETRIES_EXHAUSTED');
const DeadlineExceededError = def('DeadlineExceededError', 'GUARDS_DEADLINE_EXCEEDED');
/** One attempt outlived its budget and was abandoned (its signal aborted). */
const AttemptTimeoutError = def('AttemptTimeoutError', 'GUARDS_ATTEMPT_TIMEOUT', GuardsError);
const PermitError = def('PermitError', 'GUARDS_PERMIT_ALREADY_REPORTED', GuardsError);
/** A RetryDriver call in a phase where it means nothing (`call`, `phase`); nothing changed. */
const RetryDriverError = def('RetryDriverError', 'GUARDS_RETRY_DRIVER_PHASE', GuardsError);
const InternalError = def('InternalError', 'GUARDS_INTERNAL', GuardsError);
/**
 * A shared region refused (`code`: GUARDS_REGION_IO, _INVALID, _INCOMPATIBLE, _FULL,
 * _TIMEOUT, GUARDS_GUARD_NOT_FOUND, GUARDS_PERMIT_SLOTS_EXHAUSTED).
 */
const RegionError = def('RegionError', 'GUARDS_REGION_INVALID', GuardsError);
/** A guard of that name exists with another kind, capacity or config (`field` says which). */
const GuardMismatchError = def('GuardMismatchError', 'GUARDS_GUARD_MISMATCH', RegionError);
/**
 * A fleet member could not join or attach (`code`: GUARDS_FLEET_UNAVAILABLE: Redis
 * unreachable; GUARDS_FLEET_AUTH: credentials refused; GUARDS_FLEET_DUPLICATE: an
 * allowance or a guard attached twice; GUARDS_FLEET_LEFT: the member has left).
 */
const FleetError = def('FleetError', 'GUARDS_FLEET_UNAVAILABLE', GuardsError);

const byKind = {
  BREAKER_OPEN: BreakerOpenError,
  BREAKER_HALF_OPEN_FULL: BreakerOpenError,
  BREAKERS_FULL: BreakersFullError,
  BULKHEAD_FULL: BulkheadFullError,
  LIMIT_EXCEEDED: LimitExceededError,
  ADMISSION_REJECTED: AdmissionRejectedError,
  QUEUE_FULL: QueueFullError,
  PERMIT_ALREADY_REPORTED: PermitError,
  PERMIT_WRONG_GUARD: PermitError,
  PERMIT_UNKNOWN: PermitError,
  RETRY_DRIVER_PHASE: RetryDriverError,
  INTERNAL: InternalError,
  REGION_IO: RegionError,
  REGION_INVALID: RegionError,
  REGION_INCOMPATIBLE: RegionError,
  REGION_FULL: RegionError,
  REGION_TIMEOUT: RegionError,
  GUARD_NOT_FOUND: RegionError,
  PERMIT_SLOTS_EXHAUSTED: RegionError,
  GUARD_MISMATCH: GuardMismatchError,
  FLEET_UNAVAILABLE: FleetError,
  FLEET_AUTH: FleetError,
  FLEET_DUPLICATE: FleetError,
  FLEET_LEFT: FleetError,
};

function make(kind, message, detailsJson) {
  let details = {};
  try { details = JSON.parse(detailsJson); } catch { /* keep none */ }
  let e;
  if (kind === 'TypeError' || kind === 'RangeError') {
    e = kind === 'TypeError' ? new TypeError(message) : new RangeError(message);
    e.code = 'GUARDS_INVALID_OPTION';
  } else {
    const C = byKind[kind] || InternalError;
    e = new C(message);
    e.code = `GUARDS_${kind}`;
  }
  if (details.retryAt !== undefined) details.retryAt = BigInt(details.retryAt);
  Object.assign(e, details);
  return e;
}

native.installErrorFactory(make);

/** A `TypeError` / `RangeError` naming `option`, as the addon throws them. */
function badOption(kind, option, message) {
  const e = kind === 'TypeError' ? new TypeError(message) : new RangeError(message);
  e.code = 'GUARDS_INVALID_OPTION';
  e.option = option;
  return e;
}

module.exports = {
  GuardsError, RejectedError, BreakerOpenError, BreakersFullError, BulkheadFullError,
  LimitExceededError, AdmissionRejectedError, QueueFullError, ThrottledError,
  BudgetExhaustedError, RetriesExhaustedError, DeadlineExceededError, AttemptTimeoutError,
  PermitError, RetryDriverError, InternalError, RegionError, GuardMismatchError, FleetError,
  badOption,
};
