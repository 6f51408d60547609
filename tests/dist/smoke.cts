// Type-checked (tsc --noEmit) against the installed tarball's types, as CommonJS.
import g = require('guards');

const b = new g.CircuitBreaker({ windowSize: 4 });
const effect = b.tryAcquire().report('timeout');
// @ts-expect-error a misspelt option is refused by the types
new g.CircuitBreaker({ windowSise: 4 });
export = effect;
