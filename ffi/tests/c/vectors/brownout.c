/* brownout.json: one guards_brownout, or with `operations` a guards_brownout_table of
 * those operations (the C table is built with all of them at once). */
#include <stdio.h>

#include "vectors.h"

static guards_brownout *one;
static guards_brownout_table *table;

static const char *const KINDS[] = {"breaker_open", "bulkhead_full", "budget_exhausted",
                                    "throttled",    "timeout",       "overloaded",
                                    "failed"};
static const char *const DECISIONS[] = {"serve_fallback", "fail_fast", "proceed"};

static void cfg_operation(config_reader *c, const char *p, guards_brownout_config *cfg) {
  cfg_bool(c, path("%soptional", p), &cfg->optional);
  cfg_bool(c, path("%sexempt", p), &cfg->exempt);
  cfg_u32(c, path("%sfallback_on", p), &cfg->fallback_on);
}

static int build(driver *d) {
  config_reader c = {d, GUARDS_RESULT_OK, 0};
  if (!has(d, "capacity")) {
    guards_brownout_config cfg;
    must(guards_brownout_config_default(&cfg), "config_default");
    cfg_operation(&c, "config.", &cfg);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_brownout_new(&cfg, &one);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  guards_brownout_operation ops[64];
  size_t n = 0;
  char prefix[64];
  for (; n < sizeof ops / sizeof ops[0]; n++) {
    snprintf(prefix, sizeof prefix, "config.operations[%zu].", n);
    if (!has(d, path("%skey", prefix))) break;
    must(guards_brownout_config_default(&ops[n].config), "config_default");
    cfg_u64(&c, path("%skey", prefix), &ops[n].key);
    cfg_operation(&c, prefix, &ops[n].config);
  }
  if (!cfg_all_read(&c)) return 0;
  if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
  guards_result rc = guards_brownout_table_new(ops, n, &table);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  return submit(d);
}

static int stats(driver *d, guards_result rc, const guards_brownout_stats *s) {
  if (rc == GUARDS_RESULT_NOT_FOUND) {
    result_null(d, "");
    return submit(d);
  }
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  result_u64(d, "full", s->full);
  result_u64(d, "degraded", s->degraded);
  result_u64(d, "errors", s->errors);
  result_u64(d, "proceeded", s->proceeded);
  return submit(d);
}

int run_brownout(driver *d) {
  if (is_op(d, "new")) return build(d);
  if (is_op(d, "free")) {
    guards_brownout_free(one);
    one = NULL;
    guards_brownout_table_free(table);
    table = NULL;
    return submit(d);
  }
  guards_result rc;
  uint64_t key = table && has(d, "key") ? u64_arg(d, "key") : 0;
  if (is_op(d, "on_refusal")) {
    int kind = name_arg(d, "kind", KINDS, 7);
    uint32_t out = 0;
    rc = table ? guards_brownout_table_on_refusal(table, key, (uint32_t)kind, &out)
               : guards_brownout_on_refusal(one, (uint32_t)kind, &out);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (out > 2) return submit_failure(d, GUARDS_RESULT_INVALID_ENUM);
    result_str(d, "", DECISIONS[out]);
    return submit(d);
  }
  if (is_op(d, "on_full")) {
    if (!table) {
      rc = guards_brownout_on_full(one);
      if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
      return submit(d);
    }
    rc = guards_brownout_table_on_full(table, key);
    if (rc == GUARDS_RESULT_NOT_FOUND) result_bool(d, "", false);
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_bool(d, "", true);
    return submit(d);
  }
  guards_brownout_stats s;
  if (is_op(d, "stats")) {
    rc = table ? guards_brownout_table_get_stats(table, key, &s) : guards_brownout_get_stats(one, &s);
    return stats(d, rc, &s);
  }
  if (is_op(d, "totals")) return stats(d, guards_brownout_table_totals(table, &s), &s);
  if (is_op(d, "unknown")) {
    uint64_t n = 0;
    rc = guards_brownout_table_unknown(table, &n);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", n);
    return submit(d);
  }
  if (is_op(d, "operation_key")) {
    size_t len = 0;
    const char *name = str_arg(d, "name", &len);
    uint64_t k = 0;
    rc = guards_key_of(name, len, &k);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", k);
    return submit(d);
  }
  if (is_op(d, "decide")) {
    if (table) return unsupported(d, "a pure decision of a table's operation is not in the C API");
    uint32_t out = 0;
    rc = guards_brownout_decide(one, (uint32_t)name_arg(d, "kind", KINDS, 7), &out);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (out > 2) return submit_failure(d, GUARDS_RESULT_INVALID_ENUM);
    result_str(d, "", DECISIONS[out]);
    return submit(d);
  }
  if (is_op(d, "register"))
    return unsupported(d, "a C brownout table is built with all its operations at once");
  return unsupported(d, "an op the C brownout does not have");
}
