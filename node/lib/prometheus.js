'use strict';
// An optional prom-client collector: every guard's stats() as gauges and counters,
// labelled `guard="<name>"`. prom-client is required only when a collector is built.

const errors = require('./errors');

/**
 * Register metrics for `guards` (`{ name: guard, ... }`: anything with `stats()`) on
 * `registry` (default prom-client's global one). Each numeric stat becomes
 * `guards_<stat>` (snake_case; `_total` for counters), labelled `guard` and `kind`;
 * a breaker's state is `guards_breaker_state{state=...}` 1/0. Read at scrape time.
 */
function prometheusCollector(guards, options = {}) {
  let client;
  try { client = require('prom-client'); } catch {
    throw new errors.GuardsError("prometheusCollector needs the 'prom-client' package: npm install prom-client");
  }
  if (guards === null || typeof guards !== 'object') throw errors.badOption('TypeError', 'guards', 'prometheusCollector: guards must be an object of name -> guard');
  for (const [name, g] of Object.entries(guards)) {
    if (!g || typeof g.stats !== 'function') throw errors.badOption('TypeError', `guards.${name}`, `prometheusCollector: guards.${name} has no stats()`);
  }
  const registry = options.registry || client.register;
  const prefix = options.prefix || 'guards_';
  const LEVELS = new Set(['inFlight', 'limit', 'tokens', 'maxConcurrent', 'rejectProbability', 'length', 'entries', 'open']);
  const snake = (s) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const seen = new Map();
  const sample = () => {
    const rows = [];
    for (const [name, g] of Object.entries(guards)) {
      const kind = g.constructor && g.constructor.name ? snake(g.constructor.name).replace(/^_/, '') : 'guard';
      const s = g.stats();
      for (const [k, v] of Object.entries(s)) {
        if (typeof v === 'number' && Number.isFinite(v)) rows.push({ metric: snake(k), level: LEVELS.has(k), v, labels: { guard: name, kind } });
        else if (k === 'state' && typeof v === 'string') {
          for (const st of ['closed', 'open', 'half_open']) rows.push({ metric: 'breaker_state', level: true, v: v === st ? 1 : 0, labels: { guard: name, kind, state: st } });
        }
      }
    }
    return rows;
  };
  for (const row of sample()) {
    const full = `${prefix}${row.metric}${row.level ? '' : '_total'}`;
    if (seen.has(full)) continue;
    const labelNames = row.metric === 'breaker_state' ? ['guard', 'kind', 'state'] : ['guard', 'kind'];
    const metric = row.metric;
    const Cls = row.level ? client.Gauge : client.Counter;
    const m = new Cls({
      name: full,
      help: `guards: ${metric.replace(/_/g, ' ')}`,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const r of sample()) {
          if (r.metric !== metric) continue;
          if (row.level) this.set(r.labels, r.v); else this.inc(r.labels, r.v);
        }
      },
    });
    seen.set(full, m);
  }
  return { metrics: [...seen.keys()] };
}

module.exports = { prometheusCollector };
