'use strict';
// Fleet members against a real redis-server, started on a free loopback port for this file
// (and for the tests that kill it or need a password, their own) and killed at the end.
// Waits poll a condition a bounded number of times; nothing is timed.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const g = require('..');

const POLLS = 400;
const EVERY_MS = 25;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function connects(port) {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `f` (sync or async) every 25 ms, at most `n` times: whether it became true. */
async function poll(f, n = POLLS) {
  for (let i = 0; i < n; i++) {
    if (await f()) return true;
    await sleep(EVERY_MS);
  }
  return false;
}

async function startRedis(port, extra = []) {
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra,
  ], { stdio: 'ignore' });
  const failed = new Promise((resolve) => child.once('error', resolve));
  const up = await Promise.race([poll(() => connects(port)), failed.then(() => false)]);
  assert.ok(up, `redis-server listens on ${port} (is redis-server installed? make redis-server)`);
  return child;
}

function stopRedis(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

let redis;
let url;
let services = 0;

test.before(async () => {
  const port = await freePort();
  redis = await startRedis(port);
  url = `redis://127.0.0.1:${port}`;
});

test.after(async () => {
  await stopRedis(redis);
});

/** A fresh service name per test: fleets of one Redis are independent by service. */
const service = () => `svc-${process.pid}-${++services}`;

function options(svc, member, extra = {}) {
  return {
    url, service: svc, member, syncIntervalMs: 50, ttlMs: 900, staleAfterMs: 400,
    ioTimeoutMs: 200, ...extra,
  };
}

async function member(svc, name, allowance, extra) {
  const fleet = await g.Fleet.join(options(svc, name, extra));
  const bulkhead = new g.Bulkhead({ maxConcurrent: 1 });
  fleet.attach('stock', allowance, bulkhead);
  return { fleet, bulkhead, events: [] };
}

const caps = (ms) => ms.map((m) => m.bulkhead.maxConcurrent);
const all = (ms, n) => () => caps(ms).every((c) => c === n);
function drain(ms) {
  for (const m of ms) m.events.push(...m.fleet.events());
}

test('three members on an allowance of 12 get 4 each; a fourth brings them to 3; one leaving gives its share back', async () => {
  const svc = service();
  const ms = [];
  for (const name of ['a', 'b', 'c']) ms.push(await member(svc, name, 12));
  assert.ok(await poll(all(ms, 4)), `three members reach 4 each, got ${caps(ms)}`);
  for (const m of ms) {
    assert.equal(m.fleet.share('stock'), 4);
    const s = m.fleet.stats();
    assert.equal(s.members, 3);
    assert.equal(s.connected, true);
    assert.equal(s.fallenBack, false);
    assert.ok(s.syncs > 0);
    assert.equal(s.allowances.length, 1);
    const a = s.allowances[0];
    assert.deepEqual(Object.keys(a).sort(), ['allowance', 'claimsLost', 'claimsWon', 'fair', 'name', 'share']);
    assert.equal(a.name, 'stock');
    assert.equal(a.allowance, 12);
    assert.equal(a.share, 4);
    assert.equal(a.fair, 4);
  }
  // Each member grew from 0 by claims.
  assert.ok(ms.every((m) => m.fleet.stats().allowances[0].claimsWon >= 1));

  ms.push(await member(svc, 'd', 12));
  assert.ok(await poll(all(ms, 3)), `four members reach 3 each, got ${caps(ms)}`);
  drain(ms);
  const a = ms[0].events;
  assert.ok(a.some((e) => e.kind === 'memberJoined' && e.member === 'd'), 'a saw d join');
  assert.ok(a.some((e) => e.kind === 'shareChanged' && e.allowance === 'stock' && e.from === 4 && e.to === 3),
    'a shrank from 4 to 3');
  assert.ok(ms[3].events.some((e) => e.kind === 'shareChanged' && e.to === 3), 'd grew to 3');

  const d = ms.pop();
  await d.fleet.leave();
  assert.equal(d.fleet.left, true);
  await d.fleet.leave(); // idempotent
  assert.ok(await poll(all(ms, 4)), `the three left grow back to 4, got ${caps(ms)}`);
  drain(ms);
  assert.ok(ms[0].events.some((e) => e.kind === 'memberLeft' && e.member === 'd'), 'a saw d leave');
  // The guard keeps its last cap after leaving.
  assert.equal(d.bulkhead.maxConcurrent, 3);
  for (const m of ms) await m.fleet.leave();
});

test('a member killed with SIGKILL gives its share back after its TTL', async () => {
  const svc = service();
  const script = `
    const g = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const f = await g.Fleet.join(${JSON.stringify(options(svc, 'doomed'))});
      const b = new g.Bulkhead({ maxConcurrent: 1 });
      f.attach('stock', 8, b);
      setInterval(() => process.stdout.write(b.maxConcurrent + '\\n'), 25);
    })().catch((e) => { console.error(e); process.exit(1); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let childCap = 0;
  child.stdout.on('data', (d) => {
    const lines = String(d).trim().split('\n');
    childCap = Number(lines[lines.length - 1]);
  });
  try {
    const me = await member(svc, 'survivor', 8);
    assert.ok(await poll(() => me.bulkhead.maxConcurrent === 4 && childCap === 4),
      `the two members split 8, got ${me.bulkhead.maxConcurrent} and ${childCap}`);
    await new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGKILL'); });
    assert.ok(await poll(() => me.bulkhead.maxConcurrent === 8),
      `the survivor takes the whole allowance once the record expired, got ${me.bulkhead.maxConcurrent}`);
    drain([me]);
    assert.ok(me.events.some((e) => e.kind === 'memberLeft' && e.member === 'doomed'));
    assert.equal(me.fleet.stats().members, 1);
    await me.fleet.leave();
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

test('Redis killed and restarted: the member falls back, then rejoins and grows back', async () => {
  const port = await freePort();
  let own = await startRedis(port);
  try {
    const fleet = await g.Fleet.join({
      ...options(service(), 'alone'), url: `redis://127.0.0.1:${port}`, fallbackFloor: 2,
    });
    const b = new g.Bulkhead({ maxConcurrent: 1 });
    fleet.attach('stock', 10, b);
    assert.ok(await poll(() => b.maxConcurrent === 10), `alone, it gets all 10, got ${b.maxConcurrent}`);
    fleet.events();

    await stopRedis(own);
    assert.ok(await poll(() => fleet.stats().fallenBack), 'falls back once Redis is gone for staleAfterMs');
    let s = fleet.stats();
    assert.equal(s.connected, false);
    assert.ok(s.syncErrors > 0);
    assert.equal(b.maxConcurrent, 2, 'the fallback floor');
    const lost = fleet.events();
    assert.ok(lost.some((e) => e.kind === 'redisLost' && typeof e.error === 'string' && e.error.length > 0));
    assert.ok(lost.some((e) => e.kind === 'fellBack' && e.allowance === 'stock' && e.share === 2));
    assert.ok(lost.some((e) => e.kind === 'shareChanged' && e.from === 10 && e.to === 2));

    own = await startRedis(port);
    assert.ok(await poll(() => fleet.stats().connected && b.maxConcurrent === 10),
      `reconnects and grows back to 10, got ${b.maxConcurrent}`);
    s = fleet.stats();
    assert.equal(s.fallenBack, false);
    const back = fleet.events();
    assert.ok(back.some((e) => e.kind === 'redisRegained'));
    await fleet.leave();
  } finally {
    await stopRedis(own);
  }
});

test('a limiter\'s ceiling and a token budget\'s capacity follow their shares', async () => {
  const svc = service();
  const ms = [];
  for (const name of ['x', 'y']) {
    const fleet = await g.Fleet.join(options(svc, name));
    const limiter = new g.Limiter({ limit: 100 });
    const budget = new g.RetryBudget({ capacity: 1000, ratio: 1 });
    fleet.attach('calls', 10, limiter);
    fleet.attach('retries', 20, budget);
    ms.push({ fleet, limiter, budget });
  }
  const split = (l, r) => () => ms.every((m) => m.limiter.maxLimit === l && m.budget.capacity === r);
  assert.ok(await poll(split(5, 10)),
    `two members: ceilings 5 and capacities 10, got ${ms.map((m) => [m.limiter.maxLimit, m.budget.capacity])}`);
  for (const m of ms) {
    assert.equal(m.limiter.limit, 5, 'the limit is held under the ceiling');
    assert.equal(m.fleet.share('calls'), 5);
    assert.equal(m.fleet.share('retries'), 10);
  }
  // Calls beyond the ceiling are refused.
  const permits = [];
  for (let i = 0; i < 5; i++) permits.push(ms[0].limiter.tryAcquire());
  assert.throws(() => ms[0].limiter.tryAcquire(), { code: 'GUARDS_LIMIT_EXCEEDED' });
  for (const p of permits) p.report('ignored');
  // The budget never holds more than its share.
  for (let i = 0; i < 100; i++) ms[1].budget.deposit();
  assert.ok(ms[1].budget.tokens() <= 10);

  await ms[1].fleet.leave();
  assert.ok(await poll(() => ms[0].limiter.maxLimit === 10 && ms[0].budget.capacity === 20),
    `alone: the whole allowances, got ${ms[0].limiter.maxLimit} and ${ms[0].budget.capacity}`);
  await ms[0].fleet.leave();
});

test('a guard in a region is attached like a private one', async () => {
  const file = path.join(require('node:os').tmpdir(), `guards-fleet-test-${process.pid}`);
  const region = g.Region.open(file, { maxGuards: 4 });
  try {
    const fleet = await g.Fleet.join(options(service(), 'host'));
    const pool = region.bulkhead('pool', { maxConcurrent: 1 });
    const limiter = region.limiter('lim', { limit: 50 });
    fleet.attach('pool', 6, pool);
    fleet.attach('lim', 7, limiter);
    assert.ok(await poll(() => pool.maxConcurrent === 6 && limiter.maxLimit === 7),
      `got ${pool.maxConcurrent} and ${limiter.maxLimit}`);
    await fleet.leave();
  } finally {
    g.Region.remove(file);
  }
});

test('join refuses bad options with a TypeError or RangeError naming them, as a rejected promise', async () => {
  const svc = service();
  const p = g.Fleet.join(42);
  assert.ok(p instanceof Promise, 'join never throws: it returns a promise');
  await assert.rejects(p, { name: 'TypeError', option: 'options' });
  await assert.rejects(g.Fleet.join(), { name: 'TypeError', option: 'options' });
  const bad = [
    [{ service: svc, member: 'm' }, TypeError, 'url'],
    [{ url, member: 'm' }, TypeError, 'service'],
    [{ url, service: svc }, TypeError, 'member'],
    [{ url: 7, service: svc, member: 'm' }, TypeError, 'url'],
    [{ url, service: 7, member: 'm' }, TypeError, 'service'],
    [{ url, service: 'a b', member: 'm' }, RangeError, 'service'],
    [{ url, service: svc, member: '' }, RangeError, 'member'],
    [{ url, service: svc, member: 'm'.repeat(129) }, RangeError, 'member'],
    [{ url, service: svc, member: 'm/1' }, RangeError, 'member'],
    [{ url, service: svc, member: 'm', syncIntervalMs: 5 }, RangeError, 'syncIntervalMs'],
    [{ url, service: svc, member: 'm', syncIntervalMs: '50' }, TypeError, 'syncIntervalMs'],
    [{ url, service: svc, member: 'm', syncIntervalMs: 50, ttlMs: 60 }, RangeError, 'ttlMs'],
    [{ url, service: svc, member: 'm', syncIntervalMs: 50, staleAfterMs: 150 }, RangeError, 'staleAfterMs'],
    [{ url, service: svc, member: 'm', ioTimeoutMs: 0 }, RangeError, 'ioTimeoutMs'],
    [{ url, service: svc, member: 'm', ioTimeoutMs: NaN }, RangeError, 'ioTimeoutMs'],
    [{ url, service: svc, member: 'm', weight: 0 }, RangeError, 'weight'],
    [{ url, service: svc, member: 'm', weight: 1001 }, RangeError, 'weight'],
    [{ url, service: svc, member: 'm', weight: 1.5 }, RangeError, 'weight'],
    [{ url, service: svc, member: 'm', fallbackFloor: -1 }, RangeError, 'fallbackFloor'],
    [{ url, service: svc, member: 'm', fallbackFloor: 2 ** 32 }, RangeError, 'fallbackFloor'],
    [{ url, service: svc, member: 'm', syncInterval: 50 }, TypeError, 'syncInterval'],
    [{ url: 'http://127.0.0.1:6379', service: svc, member: 'm' }, TypeError, 'url'],
    [{ url: 'not a url', service: svc, member: 'm' }, TypeError, 'url'],
  ];
  for (const [o, E, option] of bad) {
    await assert.rejects(g.Fleet.join(o), (e) => {
      assert.ok(e instanceof E, `${JSON.stringify(o)}: ${e}`);
      assert.equal(e.option, option, JSON.stringify(o));
      assert.equal(e.code, 'GUARDS_INVALID_OPTION');
      assert.match(e.message, new RegExp(option));
      return true;
    });
  }
});

test('join rejects with GUARDS_FLEET_UNAVAILABLE when nothing listens', async () => {
  const port = await freePort();
  await assert.rejects(
    g.Fleet.join({ ...options(service(), 'm'), url: `redis://127.0.0.1:${port}` }),
    (e) => {
      assert.ok(e instanceof g.FleetError);
      assert.ok(e instanceof g.GuardsError);
      assert.equal(e.code, 'GUARDS_FLEET_UNAVAILABLE');
      assert.match(e.message, /unreachable/);
      return true;
    },
  );
});

test('join rejects with GUARDS_FLEET_AUTH for a missing or wrong password', async () => {
  const port = await freePort();
  const own = await startRedis(port, ['--requirepass', 's3cret']);
  try {
    for (const u of [`redis://127.0.0.1:${port}`, `redis://:wrong@127.0.0.1:${port}`]) {
      await assert.rejects(g.Fleet.join({ ...options(service(), 'm'), url: u }), (e) => {
        assert.ok(e instanceof g.FleetError, String(e));
        assert.equal(e.code, 'GUARDS_FLEET_AUTH', `${u}: ${e.message}`);
        return true;
      });
    }
    const ok = await g.Fleet.join({ ...options(service(), 'm'), url: `redis://:s3cret@127.0.0.1:${port}` });
    assert.equal(ok.stats().connected, true);
    await ok.leave();
  } finally {
    await stopRedis(own);
  }
});

test('attach refuses bad names, allowances and guards, duplicates, and calls after leave', async () => {
  const fleet = await g.Fleet.join(options(service(), 'm'));
  const b = () => new g.Bulkhead({ maxConcurrent: 1 });
  const opt = (option, name) => (e) => {
    assert.ok(e instanceof name, String(e));
    assert.equal(e.option, option);
    assert.equal(e.code, 'GUARDS_INVALID_OPTION');
    return true;
  };
  assert.throws(() => fleet.attach('a b', 1, b()), opt('name', RangeError));
  assert.throws(() => fleet.attach('', 1, b()), opt('name', RangeError));
  assert.throws(() => fleet.attach('x'.repeat(129), 1, b()), opt('name', RangeError));
  assert.throws(() => fleet.attach(5, 1, b()), opt('name', TypeError));
  assert.throws(() => fleet.attach('s', 0, b()), opt('allowance', RangeError));
  assert.throws(() => fleet.attach('s', 2 ** 32, b()), opt('allowance', RangeError));
  assert.throws(() => fleet.attach('s', 1.5, b()), opt('allowance', RangeError));
  assert.throws(() => fleet.attach('s', -1, b()), opt('allowance', RangeError));
  assert.throws(() => fleet.attach('s', '3', b()), opt('allowance', TypeError));
  for (const wrong of [undefined, {}, 'bulkhead', new g.CircuitBreaker(), new g.Admission()]) {
    assert.throws(() => fleet.attach('s', 3, wrong), opt('guard', TypeError));
  }
  assert.throws(() => fleet.attach('s', 3, new g.RetryBudget({ mode: 'grpc' })),
    (e) => e instanceof TypeError && e.option === 'guard' && /token_bucket/.test(e.message));
  assert.throws(() => fleet.attach('s', 2e9, new g.RetryBudget()), opt('allowance', RangeError));
  // A symbol (what no parameter takes) for each argument in turn, as
  // test/arguments.test.js does for the other classes.
  const wrong = Symbol('wrong');
  for (const [args, option] of [[[wrong], 'name'], [['s', wrong], 'allowance'], [['s', 3, wrong], 'guard']]) {
    assert.throws(() => fleet.attach(...args), opt(option, TypeError));
  }
  assert.throws(() => fleet.share(wrong), opt('name', TypeError));
  await assert.rejects(g.Fleet.join(wrong), opt('options', TypeError));
  await assert.rejects(g.Fleet.join({ ...options(service(), 'm'), url: wrong }), opt('url', TypeError));
  assert.equal(fleet.stats().allowances.length, 0, 'nothing refused was attached');

  const big = b();
  fleet.attach('s', 2 ** 32 - 1, big);
  assert.equal(big.maxConcurrent, 0, 'an attached guard starts at 0');
  assert.throws(() => fleet.attach('s', 3, b()),
    (e) => e instanceof g.FleetError && e.code === 'GUARDS_FLEET_DUPLICATE' && e.allowance === 's');
  assert.throws(() => fleet.attach('t', 3, big),
    (e) => e instanceof g.FleetError && e.code === 'GUARDS_FLEET_DUPLICATE' && /already attached/.test(e.message));
  assert.throws(() => fleet.share('nope'), opt('name', RangeError));
  assert.throws(() => fleet.share(1), opt('name', TypeError));
  assert.ok(await poll(() => big.maxConcurrent === 2 ** 32 - 1), 'alone, the whole allowance');

  await fleet.leave();
  assert.throws(() => fleet.attach('u', 3, b()), (e) => e instanceof g.FleetError && e.code === 'GUARDS_FLEET_LEFT');
  assert.throws(() => fleet.stats(), { code: 'GUARDS_FLEET_LEFT' });
  assert.throws(() => fleet.share('s'), { code: 'GUARDS_FLEET_LEFT' });
  assert.deepEqual(fleet.events(), []);
  assert.throws(() => new g.Fleet(), /constructor/);
});

test('breakers named alike open on the fleet\'s evidence; one with enough calls of its own stays closed', async () => {
  const svc = service();
  const ms = [];
  // A judges 50 calls of its own, so its 30 failures keep it closed (and published);
  // the others judge 10, and have fewer of their own.
  for (const [name, minimumCalls] of [['a', 50], ['b', 10], ['c', 10], ['d', 10]]) {
    const fleet = await g.Fleet.join(options(svc, name));
    const breaker = new g.CircuitBreaker({ windowSize: 100, minimumCalls, failureRateThreshold: 0.5 });
    fleet.attachBreaker('stock', breaker);
    ms.push({ name, fleet, breaker, events: [] });
  }
  const [a, b, c, d] = ms;
  const record = (m, outcome, n) => {
    for (let i = 0; i < n; i++) m.breaker.tryAcquire().report(outcome);
  };
  record(a, 'timeout', 30);
  record(b, 'success', 1);
  record(b, 'timeout', 1);
  record(c, 'success', 2);
  // Enough successes of its own: d decides on its own window.
  record(d, 'success', 12);
  assert.equal(a.breaker.state(), 'closed');

  assert.ok(await poll(() => b.breaker.state() === 'open' && c.breaker.state() === 'open'),
    `b and c open on the fleet's evidence, got ${b.breaker.state()}, ${c.breaker.state()}`);
  drain(ms.map((m) => ({ fleet: m.fleet, get events() { return m.events; } })));
  for (const m of [b, c]) {
    const e = m.events.find((x) => x.kind === 'breakerOpenedOnFleetEvidence');
    assert.ok(e, `${m.name} reported its opening: ${JSON.stringify(m.events)}`);
    assert.deepEqual(Object.keys(e).sort(), ['fleetCalls', 'fleetFailures', 'kind', 'members', 'name']);
    assert.equal(e.name, 'stock');
    assert.ok(e.members >= 2, `calls from at least two other members, got ${e.members}`);
    assert.ok(e.fleetCalls >= 10, `at least minimumCalls in the fleet, got ${e.fleetCalls}`);
    assert.ok(e.fleetFailures >= 30 && e.fleetFailures * 2 >= e.fleetCalls,
      `a's failures, at the threshold or more: ${e.fleetFailures} of ${e.fleetCalls}`);
    const s = m.fleet.stats();
    assert.equal(s.breakers.length, 1);
    const st = s.breakers[0];
    assert.deepEqual(Object.keys(st).sort(),
      ['calls', 'failures', 'fleetCalls', 'fleetFailures', 'fleetMembers', 'name', 'openedOnEvidence']);
    assert.equal(st.name, 'stock');
    assert.equal(st.openedOnEvidence, 1);
    assert.ok(st.fleetMembers >= 2);
    assert.equal(m.breaker.stats().closedToOpen, 1, 'the same transition as a local trip');
    assert.throws(() => m.breaker.tryAcquire(), { code: 'GUARDS_BREAKER_OPEN' });
  }
  // a publishes its 30 failures; d and a stay closed.
  assert.ok(await poll(() => a.fleet.stats().breakers[0].failures === 30), JSON.stringify(a.fleet.stats().breakers));
  assert.equal(a.fleet.stats().breakers[0].calls, 30);
  assert.equal(d.breaker.state(), 'closed');
  assert.equal(a.breaker.state(), 'closed');
  for (const m of [a, d]) {
    assert.equal(m.fleet.stats().breakers[0].openedOnEvidence, 0);
    assert.ok(!m.events.some((x) => x.kind === 'breakerOpenedOnFleetEvidence'));
  }
  for (const m of ms) await m.fleet.leave();
});

test('attachBreaker refuses what is not a breaker, bad or duplicate names, and calls after leave', async () => {
  const fleet = await g.Fleet.join(options(service(), 'm'));
  const opt = (option, name) => (e) => {
    assert.ok(e instanceof name, String(e));
    assert.equal(e.option, option);
    assert.equal(e.code, 'GUARDS_INVALID_OPTION');
    return true;
  };
  const cb = () => new g.CircuitBreaker();
  for (const wrong of [undefined, null, {}, 'breaker', 3, Symbol('wrong'), new g.Bulkhead({ maxConcurrent: 1 }),
    new g.KeyedBreakers()]) {
    assert.throws(() => fleet.attachBreaker('s', wrong), opt('breaker', TypeError));
  }
  assert.throws(() => fleet.attachBreaker('', cb()), opt('name', RangeError));
  assert.throws(() => fleet.attachBreaker('a b', cb()), opt('name', RangeError));
  assert.throws(() => fleet.attachBreaker('x'.repeat(129), cb()), opt('name', RangeError));
  assert.throws(() => fleet.attachBreaker(5, cb()), opt('name', TypeError));
  assert.equal(fleet.stats().breakers.length, 0, 'nothing refused was attached');

  // The agent may open an attached breaker from its thread: `execute` asks the breaker
  // from then on (an untimed breaker's mirror shows no generation again).
  const untimed = new g.CircuitBreaker({ slowCallDuration: (1n << 64n) - 1n });
  await untimed.execute(async () => 1);
  assert.equal(untimed._fast().mirror[0], 0);
  fleet.attachBreaker('u', untimed);
  await untimed.execute(async () => 1);
  assert.equal(untimed._fast().mirror[0], -1);
  assert.equal(untimed.stats().successes, 2);

  const one = cb();
  fleet.attachBreaker('s', one);
  assert.throws(() => fleet.attachBreaker('s', cb()),
    (e) => e instanceof g.FleetError && e.code === 'GUARDS_FLEET_DUPLICATE' && e.breaker === 's');
  assert.throws(() => fleet.attachBreaker('t', one),
    (e) => e instanceof g.FleetError && e.code === 'GUARDS_FLEET_DUPLICATE' && /already attached/.test(e.message));
  // The breakers' names are their own namespace.
  fleet.attach('s', 3, new g.Bulkhead({ maxConcurrent: 1 }));
  assert.deepEqual(fleet.stats().breakers.map((b) => b.name), ['u', 's']);
  assert.equal(one.state(), 'closed', 'attaching leaves the breaker as it was');

  await fleet.leave();
  assert.throws(() => fleet.attachBreaker('u', cb()),
    (e) => e instanceof g.FleetError && e.code === 'GUARDS_FLEET_LEFT');
});
