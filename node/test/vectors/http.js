'use strict';
// http.json: the HTTP functions (status to outcome, Retry-After, HTTP dates); header values
// come as bytes (a Buffer), as they came off the wire.

const { g, ns, int, num } = require('./util');

function build() { return new Case(); }

class Case {
  run(op, a) {
    switch (op) {
      case 'outcome_of_status': return g.outcomeOfStatus(num(a.status), a.has_retry_after);
      case 'classify': {
        const c = g.classifyHttp(num(a.status), a.retry_after ?? null, a.now_unix);
        return { outcome: c.outcome, retry_after: ns(c.retryAfterMs) };
      }
      case 'parse_retry_after': return ns(g.parseRetryAfter(a.value, a.now_unix));
      case 'parse_http_date': return int(g.parseHttpDate(a.value, a.now_unix));
      case 'format_http_date': return g.formatHttpDate(a.unix);
      default: return undefined;
    }
  }
}

module.exports = { build };
