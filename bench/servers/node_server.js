'use strict';
// One HTTP server for bench/servers/run.py: `node node_server.js FRAMEWORK GUARDS`.
//
//   FRAMEWORK  http | express | fastify | fastify-h2 (Fastify over cleartext HTTP/2)
//   GUARDS     none | empty | admission
//
// `GET /` answers 200 "ok\n". With `admission`, every request goes through the package's
// admission middleware for that framework, configured the way a user would (one
// `Admission` door, a limit per priority far above the load tool's connections, so the
// benchmark measures the door's cost, never a refusal). With `empty`, the same place holds
// a middleware that does nothing (the framework's own cost of one more middleware or
// hook: the floor under any admission middleware). Prints `listening on
// 127.0.0.1:PORT` (port 0: a free one) and, on SIGTERM, one JSON line with the
// middleware's counters, then exits.
//
// The package and the frameworks come from the repository's node/ directory
// (GUARDS_NODE_DIR overrides it).

const path = require('node:path');
const { createRequire } = require('node:module');

const nodeDir = path.resolve(process.env.GUARDS_NODE_DIR || path.join(__dirname, '..', '..', 'node'));
const requireFromNode = createRequire(path.join(nodeDir, 'package.json'));
const guards = requireFromNode(nodeDir);

const [framework, mode] = process.argv.slice(2);
const FRAMEWORKS = ['http', 'express', 'fastify', 'fastify-h2'];
if (!FRAMEWORKS.includes(framework) || !['none', 'empty', 'admission'].includes(mode)) {
  console.error(`usage: node node_server.js ${FRAMEWORKS.join('|')} none|empty|admission`);
  process.exit(2);
}
const LIMIT = 4096; // per priority: far above the load tool's concurrent requests
const door = mode === 'admission' ? new guards.Admission({ limits: Array(8).fill(LIMIT) }) : null;
const BODY = 'ok\n';

let statsOf = () => null;

async function start() {
  if (framework === 'http') {
    const http = require('node:http');
    const handler = (req, res) => {
      res.setHeader('Content-Type', 'text/plain');
      res.end(BODY);
    };
    let h = handler;
    if (door) h = guards.httpAdmission(door, handler);
    else if (mode === 'empty') h = (req, res) => handler(req, res);
    if (door) statsOf = () => h.stats();
    const server = http.createServer(h);
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    return server.address().port;
  }
  if (framework === 'express') {
    const express = requireFromNode('express');
    const app = express();
    app.set('etag', false);
    app.disable('x-powered-by');
    if (door) {
      const mw = guards.expressAdmission(door);
      statsOf = () => mw.stats();
      app.use(mw);
    } else if (mode === 'empty') {
      app.use((req, res, next) => next());
    }
    app.get('/', (req, res) => {
      res.type('text/plain').send(BODY);
    });
    const server = require('node:http').createServer(app);
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    return server.address().port;
  }
  const Fastify = requireFromNode('fastify');
  const app = Fastify({ logger: false, http2: framework === 'fastify-h2' });
  if (door) {
    const hook = guards.fastifyAdmission(door);
    statsOf = () => hook.stats();
    app.addHook('onRequest', hook);
  } else if (mode === 'empty') {
    app.addHook('onRequest', (request, reply, done) => done());
  }
  app.get('/', (request, reply) => {
    reply.type('text/plain').send(BODY);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server.address().port;
}

start().then((port) => {
  console.log(`listening on 127.0.0.1:${port}`);
  process.on('SIGTERM', () => {
    const s = statsOf();
    const doorStats = door ? door.stats() : null;
    process.stdout.write(`${JSON.stringify({ middleware: s, admission: doorStats })}\n`, () => process.exit(0));
  });
}, (err) => {
  console.error(err);
  process.exit(1);
});
