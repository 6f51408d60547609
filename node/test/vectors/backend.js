'use strict';
// The Node backend of the conformance vectors: one module per vector file (each builds
// its case from the `new` step and runs the file's ops through the public Node API; see
// util.js for the conventions), and the loop that answers the interpreter's steps.

const { Unsupported, ConfigRefused } = require('./util');

const GUARDS = {
  adaptive_throttle: require('./adaptive_throttle'),
  admission: require('./admission'),
  backoff: require('./backoff'),
  brownout: require('./brownout'),
  bulkhead: require('./bulkhead'),
  circuit_breaker: require('./circuit_breaker'),
  deadline: require('./deadline'),
  hedging: require('./hedging'),
  http: require('./http'),
  latency_tracker: require('./latency_tracker'),
  limit: require('./limit'),
  limiter: require('./limiter'),
  outcome: require('./outcome'),
  queue_discipline: require('./queue_discipline'),
  retry_budget: require('./retry_budget'),
  retry_driver: require('./retry_driver'),
  retry_policy: require('./retry_policy'),
};

/** Replay every step of `session` through the Node API. */
function replay(session) {
  let c = null;
  for (let step = session.next(); step !== null; step = session.next()) {
    const { guard, op, args } = step;
    try {
      let result;
      if (op === 'new') {
        const m = GUARDS[guard];
        if (!m) throw new Unsupported(`no Node backend for \`${guard}\``);
        c = m.build(args);
        result = null;
      } else if (op === 'free') {
        c = null;
        result = null;
      } else {
        if (c === null) throw new Error(`\`${op}\` before \`new\``);
        result = c.run(op, args);
        if (result === undefined) throw new Error(`the backend has no op \`${op}\` for ${guard}`);
      }
      session.submitResult(result);
    } catch (e) {
      if (e instanceof Unsupported) session.submitUnsupported(e.message);
      else if (e instanceof ConfigRefused) session.submitConfigError(e.field, e.kind);
      else session.submitFailed(`${e && e.stack ? e.stack : e}`);
    }
  }
  return session;
}

module.exports = { replay, GUARDS };
