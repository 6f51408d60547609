'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const express = require('express');
const Fastify = require('fastify');
const g = require('..');

const listen = (s) => new Promise((r) => s.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${s.address().port}`)));
const limits = (n) => Array(8).fill(n);

function gate() {
  let open;
  const p = new Promise((r) => { open = r; });
  return { wait: () => p, open };
}

async function exercise(name, url, door, release) {
  // One request inside (held), the next refused with 503 + Retry-After, health exempt.
  const held = fetch(`${url}/slow`);
  while (door.inFlight < 1) await new Promise((r) => setTimeout(r, 2));
  const refused = await fetch(`${url}/fast`);
  assert.equal(refused.status, 503, name);
  assert.match(refused.headers.get('retry-after'), /^[1-9]\d*$/, name);
  await refused.text();
  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 200, `${name}: health exempt`);
  await health.text();
  release();
  assert.equal((await held).status, 200);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(door.inFlight, 0, `${name}: slot released on finish`);
  // a handler error: the slot is released
  const err = await fetch(`${url}/boom`);
  assert.equal(err.status, 500, name);
  await err.text();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(door.inFlight, 0, `${name}: slot released on error`);
  // a client that goes away: the slot is released
  const ac = new AbortController();
  const gone = fetch(`${url}/hang`, { signal: ac.signal }).catch(() => 'aborted');
  while (door.inFlight < 1) await new Promise((r) => setTimeout(r, 2));
  ac.abort();
  assert.equal(await gone, 'aborted');
  for (let i = 0; i < 100 && door.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(door.inFlight, 0, `${name}: slot released on client abort`);
  const s = door.stats();
  assert.equal(s.admitted, 3, name); // slow, boom, hang (fast was refused, health is exempt)
  assert.equal(s.refusedLimitReached + s.refusedOverloaded, 1, name);
}

test('node:http', async () => {
  const door = new g.Admission({ limits: limits(1) });
  const g1 = gate();
  const handler = g.httpAdmission(door, async (req, res) => {
    if (req.url === '/slow') await g1.wait();
    if (req.url === '/boom') throw new Error('handler bug');
    if (req.url === '/hang') return;
    res.end('ok');
  });
  const s = http.createServer(handler);
  const url = await listen(s);
  try {
    await exercise('node:http', url, door, g1.open);
    assert.equal(handler.stats().disconnected, 1);
    assert.equal(handler.stats().errors, 1);
  } finally { s.closeAllConnections(); s.close(); }
});

test('Express', async () => {
  const door = new g.Admission({ limits: limits(1) });
  const g1 = gate();
  const app = express();
  app.use(g.expressAdmission(door, { priority: 'x-priority' }));
  app.get('/slow', async (req, res) => { await g1.wait(); res.send('ok'); });
  app.get('/fast', (req, res) => res.send('ok'));
  app.get('/health', (req, res) => res.send('ok'));
  app.get('/boom', () => { throw new Error('handler bug'); });
  app.get('/hang', () => {});
  const s = http.createServer(app);
  const url = await listen(s);
  try {
    await exercise('express', url, door, g1.open);
  } finally { s.closeAllConnections(); s.close(); }
});

test('Fastify', async () => {
  const door = new g.Admission({ limits: limits(1) });
  const g1 = gate();
  const app = Fastify();
  app.addHook('onRequest', g.fastifyAdmission(door, { priority: (req) => 1 }));
  app.get('/slow', async () => { await g1.wait(); return 'ok'; });
  app.get('/fast', async () => 'ok');
  app.get('/health', async () => 'ok');
  app.get('/boom', async () => { throw new Error('handler bug'); });
  app.get('/hang', () => new Promise(() => {}));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    await exercise('fastify', url, door, g1.open);
  } finally { app.server.closeAllConnections(); await app.close(); }
});

test('priority from a header; bad middleware options', () => {
  const p = g.priorityFromHeader('x-priority');
  assert.equal(p({ headers: { 'x-priority': '0' } }), 0);
  assert.equal(p({ headers: { 'x-priority': 'sheddable' } }), 3);
  assert.equal(p({ headers: { 'x-priority': '²' } }), 1);
  assert.equal(p({ headers: { 'x-priority': '9'.repeat(5000) } }), 1);
  assert.throws(() => g.expressAdmission({}), (e) => e instanceof TypeError && e.option === 'admission');
  assert.throws(() => g.expressAdmission(new g.Admission(), { exampt: [] }), (e) => e instanceof TypeError && e.option === 'exampt');
});

test('Express error paths: an error handler answering 503 is an overload signal; async errors release the slot', async () => {
  const door = new g.Admission({ limits: limits(4), limit: { algorithm: 'aimd', initialLimit: 4, minLimit: 1, interval: 1 } });
  const mw = g.expressAdmission(door);
  const app = express();
  app.use(mw);
  app.get('/overloaded', () => { throw Object.assign(new Error('db pool exhausted'), { status: 503 }); });
  app.get('/async', async () => { await new Promise((r) => setTimeout(r, 1)); throw new Error('async bug'); });
  app.get('/next', (req, res, next) => next(new Error('passed on')));
  // eslint-disable-next-line no-unused-vars
  app.use((err, req, res, next) => { res.status(err.status || 500).send(err.message); });
  const s = http.createServer(app);
  const url = await listen(s);
  try {
    for (const p of ['/overloaded', '/async', '/next']) {
      const r = await fetch(`${url}${p}`);
      await r.text();
      assert.equal(r.status, p === '/overloaded' ? 503 : 500, p);
    }
    for (let i = 0; i < 100 && door.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(door.inFlight, 0, 'every slot released');
    const st = mw.stats();
    assert.equal(st.admitted, 3);
    assert.equal(st.overloaded, 1, 'the 503 the application answered');
    assert.equal(door.stats().dropped, 1, 'reported to the door as a drop');
  } finally { s.closeAllConnections(); s.close(); }
});

test('Fastify error paths: an error handler answering 503 is an overload signal; a throwing priority function is the default', async () => {
  const door = new g.Admission({ limits: limits(2) });
  const hook = g.fastifyAdmission(door, { priority: () => { throw new Error('bad header'); } });
  const app = Fastify();
  app.addHook('onRequest', hook);
  app.setErrorHandler((err, req, reply) => { reply.code(err.statusCode || 500).send({ error: err.message }); });
  app.get('/overloaded', async () => { throw Object.assign(new Error('busy'), { statusCode: 503 }); });
  app.get('/boom', async () => { throw new Error('bug'); });
  app.get('/ok', async () => 'ok');
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const codes = [];
    for (const p of ['/overloaded', '/boom', '/ok']) {
      const r = await fetch(`${url}${p}`);
      await r.text();
      codes.push(r.status);
    }
    assert.deepEqual(codes, [503, 500, 200]);
    for (let i = 0; i < 100 && door.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(door.inFlight, 0);
    assert.equal(hook.stats().admitted, 3, 'admitted at the default priority');
    assert.equal(hook.stats().overloaded, 1);
    assert.equal(door.stats().refusedByPriority.reduce((a, b) => a + b, 0), 0);
  } finally { app.server.closeAllConnections(); await app.close(); }
});

test('node:http: a handler that throws after writing headers destroys the response; its slot is released', async () => {
  const door = new g.Admission({ limits: limits(2) });
  const handler = g.httpAdmission(door, async (req, res) => {
    res.writeHead(200);
    res.write('partial');
    throw new Error('late bug');
  });
  const s = http.createServer(handler);
  const url = await listen(s);
  try {
    await assert.rejects(async () => { const r = await fetch(url); await r.text(); });
    for (let i = 0; i < 100 && door.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(door.inFlight, 0);
    assert.equal(handler.stats().errors, 1);
  } finally { s.closeAllConnections(); s.close(); }
});

test('Fastify over HTTP/2: the slot is released when the stream closes; a 503 the handler answers is an overload signal', async () => {
  const http2 = require('node:http2');
  const door = new g.Admission({ limits: limits(4) });
  const hook = g.fastifyAdmission(door);
  const app = Fastify({ http2: true });
  app.addHook('onRequest', hook);
  app.get('/ok', async () => 'ok');
  app.get('/busy', async (req, reply) => { reply.code(503); return 'busy'; });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = http2.connect(url);
  const get = (p) => new Promise((resolve, reject) => {
    const s = client.request({ ':path': p });
    let status;
    s.on('response', (h) => { status = h[':status']; });
    s.on('data', () => {});
    s.on('end', () => resolve(status));
    s.on('error', reject);
  });
  try {
    assert.deepEqual(await Promise.all([get('/ok'), get('/ok'), get('/busy')]), [200, 200, 503]);
    for (let i = 0; i < 100 && door.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(door.inFlight, 0, 'every slot released');
    const s = hook.stats();
    assert.equal(s.admitted, 3);
    assert.equal(s.overloaded, 1);
    assert.equal(s.disconnected, 0);
    assert.equal(door.stats().succeeded, 2);
    assert.equal(door.stats().dropped, 1);
  } finally { client.close(); await app.close(); }
});
