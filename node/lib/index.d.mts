/*
 * Types of the ES module entry (lib/index.mjs): the same names as the CommonJS entry
 * (lib/index.d.ts), and the whole package as the default export.
 */
export * from './index.js';
import * as guards from './index.js';
export default guards;
