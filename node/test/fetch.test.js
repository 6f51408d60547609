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
    const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 2 }, attemptTimeoutMs: 2000, timeoutMs: 5000 });
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
