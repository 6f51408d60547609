// Type-checked (tsc --noEmit) against the installed tarball's types, as an ES module.
import guards, { CircuitBreaker, Bulkhead, BulkheadFullError } from 'guards';
import type { CircuitBreakerOptions } from 'guards';

const opts: CircuitBreakerOptions = { windowSize: 4, minimumCalls: 4 };
const b: CircuitBreaker = new CircuitBreaker(opts);
const state: 'closed' | 'open' | 'half_open' = b.state();
const k = new guards.Bulkhead({ maxConcurrent: 1 });
const refused: boolean = (() => { try { k.tryAcquire(); return false; } catch (e) { return e instanceof BulkheadFullError; } })();
// @ts-expect-error a misspelt option is refused by the types
new Bulkhead({ maxConcurent: 1 });
export { state, refused };
