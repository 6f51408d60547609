'use strict';
// A short tour of the Node package: a breaker protecting a failing dependency, a retry
// with a budget riding out a flaky one, a fallback served for an optional part, and the
// admission door refusing with 503 + Retry-After. Run with `make demo-node`.
const http = require('node:http');
const g = require('..');

(async () => {
  console.log(`guards for Node ${g.version} (native addon over guards-core)\n`);

  const breaker = new g.CircuitBreaker({ windowSize: 10, minimumCalls: 5, openDuration: 200 });
  breaker.on('stateChange', (e) => console.log(`  breaker: ${e.from} -> ${e.to}`));
  let calls = 0;
  const down = async () => { calls++; throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }); };
  let refused = 0;
  for (let i = 0; i < 20; i++) {
    try { await breaker.execute(down); } catch (e) { if (e instanceof g.BreakerOpenError) refused++; }
  }
  console.log(`1. breaker: 20 calls to a dead dependency, ${calls} reached it, ${refused} refused at once`);

  const budget = new g.RetryBudget();
  const retry = new g.Retry({ maxAttempts: 3, budget, backoff: { base: 5, cap: 50 } });
  retry.on('retry', (e) => console.log(`  retry after attempt ${e.attempt} (${e.outcome}), waiting ${e.delayMs.toFixed(1)} ms`));
  let n = 0;
  const v = await retry.execute(async () => { if (++n < 3) throw Object.assign(new Error('503'), { status: 503 }); return 'in stock'; });
  console.log(`2. retry: "${v}" after ${n} attempts; budget tokens left ${budget.tokens().toFixed(1)}`);

  const badges = g.guarded([breaker], { fallback: (e) => `no badge (${e.code})` });
  console.log(`3. fallback for an optional part: ${await badges.execute(async () => 'badge')}`);

  const door = new g.Admission({ limits: Array(8).fill(1) });
  let release;
  const server = http.createServer(g.httpAdmission(door, (req, res) => {
    if (req.url === '/slow') { release = () => res.end('done'); return; }
    res.end('ok');
  }));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  const slow = fetch(`${url}/slow`);
  while (door.inFlight < 1) await new Promise((r) => setTimeout(r, 2));
  const r = await fetch(`${url}/`);
  console.log(`4. admission: a request over the limit gets ${r.status} with Retry-After: ${r.headers.get('retry-after')}`);
  await r.text();
  release();
  await (await slow).text();
  server.close();
})();
