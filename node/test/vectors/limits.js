'use strict';
// The `limit` config of limit.json, limiter.json and admission.json as the Node API takes
// it: a number for a fixed limit, or `{ algorithm, ...options }`.

const { unitsOf, options } = require('./util');

const units = { aimd: unitsOf('aimd'), vegas: unitsOf('vegas'), gradient: unitsOf('gradient') };

/** The limit options under `prefix` (`config.limit.` or `config.`), or undefined. */
function limitOptions(args, prefix) {
  const algorithm = args[`${prefix}algorithm`];
  if (algorithm === undefined) return undefined;
  if (algorithm === 'fixed') {
    const n = args[`${prefix}limit`];
    return n === undefined ? undefined : (typeof n === 'bigint' && n > BigInt(Number.MAX_SAFE_INTEGER) ? n : Number(n));
  }
  const u = units[algorithm];
  const o = options(args, (p) => (u ? u.get(p) : undefined), prefix);
  return o;
}

/** The rest of a limiter's or admission's options (without `limit`). */
function withoutLimit(args, unitOf) {
  const rest = Object.fromEntries(Object.entries(args).filter(([k]) => !k.startsWith('config.limit.')));
  return options(rest, unitOf);
}

module.exports = { limitOptions, withoutLimit };
