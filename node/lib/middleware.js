'use strict';
// Admission control at a server's door: node:http, Express and Fastify. A request that
// would push its priority past its limit gets 503 with Retry-After at once; health paths
// are exempt; the slot is released on every path (finished, errored, client gone).

const native = require('./native');
const errors = require('./errors');
const { NUM } = require('./outcome');
const { fastOf } = require('./guards');

const DEFAULT_EXEMPT = ['/health', '/healthz', '/livez', '/readyz', '/ready'];
const PRIORITY_NAMES = { critical_plus: 0, critical: 1, sheddable_plus: 2, sheddable: 3 };

/** A priority function reading header `name`: a number 0..7 or a name (`critical`, ...). */
function priorityFromHeader(name = 'x-priority', fallback = 1) {
  const h = String(name).toLowerCase();
  return (req) => {
    const v = req.headers[h];
    if (typeof v !== 'string') return fallback;
    const t = v.trim().toLowerCase();
    if (/^[0-7]$/.test(t)) return Number(t);
    return t in PRIORITY_NAMES ? PRIORITY_NAMES[t] : fallback;
  };
}

function pathOf(url) {
  const i = url.indexOf('?');
  return i < 0 ? url : url.slice(0, i);
}

function makeDoor(admission, options = {}) {
  if (!(admission instanceof native.Admission || admission instanceof native.RegionAdmission)) throw errors.badOption('TypeError', 'admission', 'admission middleware: the first argument must be an Admission (or a RegionAdmission)');
  if (options === null || typeof options !== 'object') throw errors.badOption('TypeError', 'options', 'admission middleware: options must be an object');
  const known = ['priority', 'exempt', 'onReject'];
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw errors.badOption('TypeError', k, `admission middleware: unknown option \`${k}\` (valid options: ${known.join(', ')})`);
  }
  let priority = options.priority;
  if (typeof priority === 'string') priority = priorityFromHeader(priority);
  if (priority !== undefined && typeof priority !== 'function' && !Number.isInteger(priority)) {
    throw errors.badOption('TypeError', 'priority', 'admission middleware: `priority` must be a function of the request, a header name or a number 0..7');
  }
  const exempt = new Set(options.exempt ?? DEFAULT_EXEMPT);
  if (options.onReject !== undefined && typeof options.onReject !== 'function') {
    throw errors.badOption('TypeError', 'onReject', 'admission middleware: `onReject` must be a function');
  }
  const f = fastOf(admission);
  const limitSeen = typeof admission._limitSeen === 'function' ? (l) => admission._limitSeen(l) : () => {};
  const stats = { requests: 0, exempt: 0, admitted: 0, rejected: 0, overloaded: 0, disconnected: 0, errors: 0 };

  function priorityOf(req) {
    if (priority === undefined) return 1;
    if (typeof priority === 'number') return priority;
    let p;
    try { p = priority(req); } catch { return 1; }
    return Number.isInteger(p) && p >= 0 && p <= 7 ? p : 1;
  }

  // The hot path of every request: one native acquire, one native report, one 'close'
  // listener shared by every request of this door (its ticket rides on the response
  // under a symbol of this door's own), no closure per request.
  const kTicket = Symbol('guards.admission.ticket');

  /** Report the ticket on `res` with `outcome`, once (later calls do nothing). */
  function release(res, outcome) {
    const t = res[kTicket];
    if (t === undefined || t < 0) return;
    res[kTicket] = -1;
    limitSeen(f.report(t, outcome));
  }

  // 'close' comes last on every path: after 'finish' when the response was written
  // (writableFinished), alone when the client went away first.
  function onClose() {
    if (this[kTicket] < 0) return;
    if (this.writableFinished) {
      const s = this.statusCode;
      if (s === 503 || s === 429) { stats.overloaded++; release(this, NUM.overloaded); } else release(this, NUM.success);
    } else {
      stats.disconnected++;
      release(this, NUM.cancelled);
    }
  }

  /** Admit `req`: true, or false after answering 503 on `res`. */
  function admit(req, res) {
    stats.requests++;
    if (exempt.has(pathOf(req.url || '/'))) { stats.exempt++; return true; }
    const t = f.acquire(priorityOf(req));
    if (t < 0) {
      stats.rejected++;
      const secs = f.retryAfterSecs();
      if (!res.headersSent) {
        res.statusCode = 503;
        res.setHeader('Retry-After', String(Math.max(1, Math.ceil(secs))));
        res.setHeader('Content-Type', 'text/plain; charset=utf-8');
        res.setHeader('Connection', 'close');
      }
      res.end('503 Service Unavailable: overloaded, retry later\n');
      if (options.onReject) options.onReject(req);
      return false;
    }
    stats.admitted++;
    res[kTicket] = t;
    res.on('close', onClose);
    return true;
  }
  return { admit, release, stats };
}

/**
 * Wrap a node:http request handler: `http.createServer(httpAdmission(door, handler, options))`.
 * A handler that throws (or rejects) gets a 500 and its slot released.
 */
function httpAdmission(admission, handler, options) {
  if (typeof handler !== 'function') throw errors.badOption('TypeError', 'handler', 'httpAdmission: handler must be a function');
  const door = makeDoor(admission, options);
  const fail = (res, err) => {
    door.stats.errors++;
    door.release(res, NUM.ignored);
    if (!res.headersSent) { res.statusCode = 500; res.end(); } else res.destroy(err);
  };
  const wrapped = (req, res) => {
    if (!door.admit(req, res)) return;
    try {
      const r = handler(req, res);
      if (r && typeof r.then === 'function') r.then(undefined, (err) => fail(res, err));
    } catch (err) {
      fail(res, err);
    }
  };
  wrapped.stats = () => ({ ...door.stats });
  return wrapped;
}

/** Express middleware: `app.use(expressAdmission(door, options))`. */
function expressAdmission(admission, options) {
  const door = makeDoor(admission, options);
  const mw = (req, res, next) => {
    if (door.admit(req, res)) next();
  };
  mw.stats = () => ({ ...door.stats });
  return mw;
}

/** A Fastify `onRequest` hook: `fastify.addHook('onRequest', fastifyAdmission(door, options))`. */
function fastifyAdmission(admission, options) {
  const door = makeDoor(admission, options);
  const hook = (request, reply, done) => {
    if (!door.admit(request.raw, reply.raw)) {
      reply.hijack();
      return;
    }
    done();
  };
  hook.stats = () => ({ ...door.stats });
  return hook;
}

module.exports = { httpAdmission, expressAdmission, fastifyAdmission, priorityFromHeader, DEFAULT_EXEMPT };
