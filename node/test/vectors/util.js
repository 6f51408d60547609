'use strict';
// Helpers of the Node backend (see backend.js).
//
// The Node backend of the conformance vectors (tests/vectors/README.md): the shared
// interpreter (`VectorSession`, ffi's `guards::vectors`) hands out one step at a time;
// this backend runs it through the public Node API (the classes and functions `require('guards')`
// exports, with their Node conventions: options in camelCase, durations in ms or exact ns
// as bigints, instants as bigints) and replies with the result.
//
// A value the Node API does not show is replied as unobservable (`U`), an op it does not
// have as unsupported: both are counted and reported by the interpreter, never passed.
// Results are converted back to the files' form only where the conversion is exact: a
// duration the API gives in ms is turned back into integer ns when it is below 2^51 ns
// (where ms = ns / 1e6 round-trips), and is unobservable otherwise.

const g = require('../..');
const native = require('../../lib/native');

/** An unobservable value (any symbol is, for the interpreter). */
const U = Symbol('unobservable');

/** A reply other than a result. */
class Unsupported extends Error {}
class ConfigRefused extends Error {
  constructor(field, kind) { super(`${field}: ${kind}`); this.field = field; this.kind = kind; }
}

const snake = (s) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/** Exact integer ns of a duration the API gives in ms (`U` beyond 2^51 ns); `null` stays. */
function ns(ms) {
  if (ms === null || ms === undefined) return null;
  if (ms === Infinity) return U;
  const x = ms * 1e6;
  if (!(Math.abs(x) < 2 ** 51)) return U;
  return BigInt(Math.round(x));
}

/** An integer counter the API gives as a number. */
function int(n) {
  if (n === null || n === undefined) return null;
  if (!Number.isSafeInteger(n)) return U;
  return BigInt(n);
}

/** `null`/`undefined` of an optional argument left out. */
const opt = (v) => (v === null ? undefined : v);

/** Instants and durations the files give in ns, as the API takes them (exact bigints). */
const nsArg = (v) => (typeof v === 'bigint' ? v : BigInt(v));

/** A whole number argument (priority, counts) as a number. */
const num = (v) => Number(v);

// ---------------------------------------------------------------------------------------
// Configs: `config.<path>` arguments (snake_case, `.` and `[i]`) to a Node options object.

/** Units by camelCase path, from the native schemas. */
function unitsOf(...schemas) {
  const u = new Map();
  for (const s of schemas) for (const f of g.configSchema(s)) u.set(f.name, f.unit);
  return u;
}

function leaf(v, unit) {
  if (typeof v === 'bigint') {
    if (unit === 'duration_ms') return v >= 0n ? v : Number(v) / 1e6;
    if (v < 0n || v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
    return v;
  }
  return v;
}

/** Set `value` at snake path `path` of object `o` (camelCase keys, arrays for `[i]`). */
function setPath(o, path, value) {
  const parts = [];
  for (const seg of path.split('.')) {
    const m = /^(\w+?)((?:\[\d+\])*)$/.exec(seg);
    parts.push(camel(m[1]));
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) parts.push(Number(i[1]));
  }
  let cur = o;
  for (let i = 0; i < parts.length - 1; i++) {
    const k = parts[i];
    if (cur[k] === undefined) cur[k] = typeof parts[i + 1] === 'number' ? [] : {};
    cur = cur[k];
  }
  cur[parts[parts.length - 1]] = value;
}

/**
 * The options object of the `config.*` arguments under `prefix` (default `config.`),
 * durations as exact bigint ns. `unitOf(camelPath)` gives a field's unit.
 */
function options(args, unitOf, prefix = 'config.') {
  const o = {};
  for (const [k, v] of Object.entries(args)) {
    if (!k.startsWith(prefix)) continue;
    const path = k.slice(prefix.length);
    const camelPath = path.split('.').map((s) => camel(s)).join('.');
    setPath(o, path, leaf(v, unitOf(camelPath.replace(/\[\d+\]/g, (x) => x))));
  }
  // Sparse arrays (limits given from index 2 on, say) are filled with `undefined`: the
  // Node API keeps the default of an element left out.
  return o;
}

/** Build with `make()`; a refused config becomes the interpreter's config error. */
function building(make, { stripPrefix } = {}) {
  try {
    return make();
  } catch (e) {
    if ((e instanceof RangeError || e instanceof TypeError) && typeof e.option === 'string' && typeof e.kind === 'string') {
      let field = e.option;
      if (stripPrefix && field.startsWith(stripPrefix)) field = field.slice(stripPrefix.length);
      throw new ConfigRefused(field.split('.').map(snake).join('.'), e.kind);
    }
    throw e;
  }
}

/** Permits (or receipts) held by the interpreter's handles. */
class Held {
  #m = new Map();
  /** Keep `p` if the step says `hold`, else hand it to `drop`. */
  keep(args, p, drop) {
    if (args.hold !== undefined) this.#m.set(args.hold, p); else drop(p);
  }
  take(args) {
    const p = this.#m.get(args.permit);
    if (p === undefined) throw new Error(`no permit held under handle ${args.permit}`);
    this.#m.delete(args.permit);
    return p;
  }
  peek(args) {
    const p = this.#m.get(args.permit);
    if (p === undefined) throw new Error(`no permit held under handle ${args.permit}`);
    return p;
  }
}

/** Run `f` expecting one of the Node API's refusals (`C`): the error, or `null` if none. */
function refusal(C, f) {
  try {
    f();
    return null;
  } catch (e) {
    if (e instanceof C) return e;
    throw e;
  }
}

module.exports = {
  g, native, U, Unsupported, ConfigRefused, Held, ns, int, opt, nsArg, num, snake, camel,
  unitsOf, options, building, refusal,
};
