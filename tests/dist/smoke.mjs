// Install test of the npm tarball through import (make test-dist-node): named and default.
import assert from 'node:assert/strict';
import guards, { CircuitBreaker, Bulkhead, BreakerOpenError, BulkheadFullError } from 'guards';

assert.equal(guards.CircuitBreaker, CircuitBreaker);
const b = new CircuitBreaker({ windowSize: 4, minimumCalls: 4 });
for (let i = 1; i <= 4; i++) assert.equal(b.tryAcquire().report('timeout'), i < 4 ? 'counted' : 'opened');
assert.equal(b.state(), 'open');
assert.throws(() => b.tryAcquire(), BreakerOpenError);
console.log('esm breaker: open after 4 timeouts, next call refused (BreakerOpenError)');
const k = new Bulkhead({ maxConcurrent: 1 });
const first = k.tryAcquire();
assert.throws(() => k.tryAcquire(), BulkheadFullError);
console.log('esm bulkhead: second call refused while one is in flight (BulkheadFullError)');
assert.equal(first.release(), true);
console.log('esm smoke: ok');
