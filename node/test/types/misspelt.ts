// Refused by tsc (test/typescript.test.js): a misspelt option of a guard.
import * as g from '../..';

export const breaker = new g.CircuitBreaker({ windowSise: 20 });
