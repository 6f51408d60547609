'use strict';
// Install test of the npm tarball through require (make test-dist-node).
const assert = require('node:assert/strict');
const g = require('guards');

assert.ok(require.resolve('guards').includes('node_modules'), require.resolve('guards'));
const b = new g.CircuitBreaker({ windowSize: 4, minimumCalls: 4 });
for (let i = 1; i <= 4; i++) assert.equal(b.tryAcquire().report('timeout'), i < 4 ? 'counted' : 'opened');
assert.equal(b.state(), 'open');
assert.throws(() => b.tryAcquire(), g.BreakerOpenError);
console.log('cjs breaker: open after 4 timeouts, next call refused (BreakerOpenError)');
const k = new g.Bulkhead({ maxConcurrent: 1 });
const first = k.tryAcquire();
assert.throws(() => k.tryAcquire(), (e) => e instanceof g.BulkheadFullError && e.inFlight === 1);
console.log('cjs bulkhead: second call refused while one is in flight (BulkheadFullError)');
assert.equal(first.release(), true);
k.tryAcquire().release();
console.log(`cjs smoke: ok (guards ${g.version})`);
