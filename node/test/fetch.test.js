'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const g = require('..');

function server(handler) {
  return new Promise((resolve) => {
    const s = http.createServer(handler);
    s.listen(0, '127.0.0.1', () => resolve({ s, url: `http://127.0.0.1:${s.address().port}` }));
  });
}

test('fetch wrapper against a flaky local server: retries, Retry-After, deadline header, breaker per host', async () => {
  let calls = 0;
  const headers = [];
  const { s, url } = await server((req, res) => {
    calls++;
    headers.push(req.headers['grpc-timeout']);
    if (req.url === '/flaky' && calls <= 2) { res.writeHead(503, { 'Retry-After': '0' }); res.end('busy'); return; }
    if (req.url === '/down') { res.writeHead(500); res.end('down'); return; }
    if (req.url === '/missing') { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('ok');
  });
  try {
    // This test is about retries: 10 of its calls fail, which would open a default breaker
    // (10 calls judged); the breaker per host is the next test's.
    const breakers = new g.KeyedBreakers({ minimumCalls: 100 });
    const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 2 }, attemptTimeoutMs: 2000, timeoutMs: 5000, breakers });
    const r = await f(`${url}/flaky`);
    assert.equal(r.status, 200);
    assert.equal(await r.text(), 'ok');
    assert.equal(calls, 3);
    assert.ok(headers.every((h) => /^\d+[mu]$/.test(h)), `grpc-timeout sent: ${headers}`);
    calls = 0;
    const last = await f(`${url}/down`);
    assert.equal(last.status, 500, 'the last response is returned when the policy gives up');
    assert.equal(calls, 3);
    calls = 0;
    assert.equal((await f(`${url}/missing`)).status, 404);
    assert.equal(calls, 1, 'a 4xx is not retried');
    calls = 0;
    const post = await f(`${url}/down`, { method: 'POST' });
    assert.equal(post.status, 500);
    assert.equal(calls, 1, 'a POST without an Idempotency-Key is not retried');
    calls = 0;
    await f(`${url}/down`, { method: 'POST', headers: { 'Idempotency-Key': 'k1' } });
    assert.equal(calls, 3, 'a POST with an Idempotency-Key is');
    assert.ok(f.breakers.stats().entries >= 1);
  } finally { s.close(); }
});

test('fetch wrapper: a hanging server times the attempt out and aborts it; the breaker opens per host', async () => {
  let aborted = 0;
  const { s, url } = await server((req) => { req.on('close', () => { aborted++; }); });
  try {
    const breakers = new g.KeyedBreakers({ windowSize: 2, minimumCalls: 2, openDuration: 60_000 });
    const f = g.createFetch({ maxAttempts: 2, backoff: { base: 1, cap: 1 }, attemptTimeoutMs: 50, breakers, deadlineHeader: 'millis' });
    await assert.rejects(f(`${url}/hang`), (e) => e instanceof g.RetriesExhaustedError && e.cause && e.cause.code === 'GUARDS_ATTEMPT_TIMEOUT');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(aborted, 2, 'both attempts were aborted');
    assert.equal(breakers.state(url), 'open');
    await assert.rejects(f(`${url}/hang`), g.BreakerOpenError);
    const ac = new AbortController();
    const other = g.createFetch({ attemptTimeoutMs: 5000, breakers: null });
    const p = other(`${url}/hang`, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('caller gave up')), 20);
    await assert.rejects(p, /caller gave up/);
  } finally { s.closeAllConnections(); s.close(); }
});

test('fetch wrapper: bad options and a connection refused', async () => {
  assert.throws(() => g.createFetch({ deadlineHeader: 'x' }), (e) => e instanceof RangeError && e.option === 'deadlineHeader');
  assert.throws(() => g.createFetch({ breakers: {} }), (e) => e instanceof TypeError && e.option === 'breakers');
  const f = g.createFetch({ maxAttempts: 2, backoff: { base: 1, cap: 1 } });
  await assert.rejects(f('not a url'), (e) => e instanceof TypeError && e.option === 'url');
  const { s, url } = await server(() => {});
  s.close();
  await new Promise((r) => s.on('close', r));
  await assert.rejects(f(`${url}/`), (e) => e instanceof g.RetriesExhaustedError);
});

/** Arrival times (ms, monotonic) of the requests a server saw, by path. */
function arrivals() {
  const seen = [];
  return { seen, at: () => { seen.push(performance.now()); } };
}

test('fetch wrapper: Retry-After is honoured (the retry waits at least as long), and one too long is not waited for', async () => {
  const a = arrivals();
  let calls = 0;
  const { s, url } = await server((req, res) => {
    calls++;
    a.at();
    if (req.url === '/later' && calls === 1) { res.writeHead(429, { 'Retry-After': '1' }); res.end(); return; }
    if (req.url === '/much-later') { res.writeHead(503, { 'Retry-After': '120' }); res.end(); return; }
    res.end('ok');
  });
  try {
    const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 2 }, maxRetryAfter: 5000, breakers: null });
    const r = await f(`${url}/later`);
    assert.equal(r.status, 200);
    assert.equal(calls, 2);
    assert.ok(a.seen[1] - a.seen[0] >= 990, `the retry came ${a.seen[1] - a.seen[0]} ms after the 429 asking for 1 s`);
    calls = 0;
    const r2 = await f(`${url}/much-later`);
    assert.equal(r2.status, 503, 'a Retry-After past maxRetryAfter: the answer is returned, not waited for');
    assert.equal(calls, 1);
    assert.equal(f.stats().idempotent.policy.retryAfterTooLong, 1);
  } finally { s.closeAllConnections(); s.close(); }
});

test('fetch wrapper: the budget refuses retries once spent (the response is returned)', async () => {
  let calls = 0;
  const { s, url } = await server((req, res) => { calls++; res.writeHead(500); res.end(); });
  try {
    const budget = new g.RetryBudget({ capacity: 1, ratio: 0 });
    const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 1 }, budget, breakers: null });
    assert.equal((await f(url)).status, 500);
    assert.equal(calls, 2, 'the one token paid for one retry');
    calls = 0;
    assert.equal((await f(url)).status, 500);
    assert.equal(calls, 1, 'no token left: no retry');
    assert.equal(budget.stats().withdrawals, 1);
    assert.equal(budget.stats().refusals, 2, 'each later retry asked and was refused');
    assert.equal(f.stats().idempotent.policy.budgetExhausted, 2);
  } finally { s.closeAllConnections(); s.close(); }
});

test('fetch wrapper: a breaker per host opens for the failing host only', async () => {
  const down = await server((req, res) => { res.writeHead(502); res.end(); });
  const up = await server((req, res) => { res.end('ok'); });
  try {
    const breakers = new g.KeyedBreakers({ windowSize: 4, minimumCalls: 4, failureRateThreshold: 0.5, openDuration: 60_000 });
    const states = [];
    breakers.on('stateChange', (e) => states.push([e.key, e.to]));
    const f = g.createFetch({ maxAttempts: 1, breakers });
    for (let i = 0; i < 4; i++) assert.equal((await f(down.url)).status, 502);
    await assert.rejects(f(down.url), (e) => e instanceof g.BreakerOpenError && e.code === 'GUARDS_BREAKER_OPEN');
    assert.equal((await f(up.url)).status, 200, 'another host is still served');
    assert.equal(breakers.state(down.url), 'open');
    assert.equal(breakers.state(up.url), 'closed');
    assert.deepEqual(states, [[down.url, 'open']]);
  } finally {
    for (const x of [down, up]) { x.s.closeAllConnections(); x.s.close(); }
  }
});

test('fetch wrapper: per-call timeoutMs limits the whole call (retries and waits included)', async () => {
  let aborted = 0, calls = 0;
  const { s, url } = await server((req) => { calls++; req.on('close', () => { aborted++; }); });
  try {
    // The client allows 10 s; this call allows 150 ms: its attempt gets the 150 ms.
    const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 1 }, timeoutMs: 10_000, breakers: null, deadlineHeader: 'millis' });
    await assert.rejects(f(`${url}/hang`, { timeoutMs: 150 }), (e) => e instanceof g.DeadlineExceededError && e.reason === 'deadline_exceeded');
    for (let i = 0; i < 50 && aborted < calls; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(aborted, calls, 'every attempt out was aborted');
    assert.ok(calls >= 1);
    await assert.rejects(f(`${url}/hang`, { timeoutMs: -1 }), (e) => e instanceof RangeError && e.option === 'timeoutMs');
  } finally { s.closeAllConnections(); s.close(); }
});

test("fetch wrapper: the caller's signal cancels a wait between attempts (no retry after it)", async () => {
  let calls = 0;
  const { s, url } = await server((req, res) => { calls++; res.writeHead(503, { 'Retry-After': '2' }); res.end(); });
  try {
    const f = g.createFetch({ maxAttempts: 3, maxRetryAfter: 5000, breakers: null });
    const ac = new AbortController();
    const p = f(url, { signal: ac.signal });
    while (calls < 1) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
    ac.abort(new Error('the user left'));
    await assert.rejects(p, /the user left/);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(calls, 1, 'no attempt after the abort');
    assert.equal(f.stats().idempotent.cancelled, 1);
    await assert.rejects(f(url, { signal: 'stop' }), (e) => e instanceof TypeError && e.option === 'signal');
  } finally { s.closeAllConnections(); s.close(); }
});
