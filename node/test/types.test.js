'use strict';
// index.d.ts: generated and committed; its option interfaces must name exactly the fields
// of the config schemas the addon validates against (the Makefile's node-dts-check
// catches a stale file; this catches a generator that drops or invents a field).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const g = require('..');

const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');

function interfaceKeys(name) {
  const start = dts.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `${name} in index.d.ts`);
  const body = dts.slice(start, dts.indexOf('\n}\n', start));
  return [...body.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1]);
}

test('every schema field is an option of its interface, and nothing else is', () => {
  const pairs = [
    ['CircuitBreakerOptions', 'circuit_breaker', ['capacity']],
    ['BulkheadOptions', 'bulkhead', []],
    ['RetryPolicyOptions', 'retry_policy', ['seed']],
    ['LatencyTrackerOptions', 'latency_tracker', []],
    ['HedgingOptions', 'hedging', []],
    ['AdaptiveThrottleOptions', 'adaptive_throttle', []],
    ['QueueDisciplineOptions', 'queue_discipline', []],
    ['TokenBudgetOptions', 'token_budget', []],
    ['AimdOptions', 'aimd', []],
    ['LimiterOptions', 'limiter', ['limit']],
    ['AdmissionOptions', 'admission', ['limit']],
  ];
  for (const [iface, schema, extra] of pairs) {
    const top = new Set(g.configSchema(schema).map((f) => f.name.replace(/[.[].*$/, '')));
    assert.deepEqual(new Set(interfaceKeys(iface)), new Set([...top, ...extra]), iface);
  }
});

test('every class the package exports is declared', () => {
  for (const c of ['CircuitBreaker', 'KeyedBreakers', 'Bulkhead', 'Limiter', 'Admission', 'RetryBudget',
    'RetryPolicy', 'RetryDriver', 'Backoff', 'Deadline', 'Hedging', 'LatencyTracker', 'AdaptiveThrottle',
    'QueueDiscipline', 'Brownout', 'Fleet']) {
    assert.match(dts, new RegExp(`export declare class ${c} `), c);
    assert.equal(typeof g[c], 'function', c);
  }
});
