/* backoff.json: a guards_backoff reseeded with the case's seed (its delay draws from it,
 * as the file's generator), and the stable-offset functions. */
#include "vectors.h"

static guards_backoff *backoff;

/* `x` is read after the call (the arguments' order of evaluation is unspecified). */
static int answer(driver *d, guards_result rc, const uint64_t *x) {
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  result_u64(d, "", *x);
  return submit(d);
}

int run_backoff(driver *d) {
  if (is_op(d, "new")) {
    guards_backoff_config cfg;
    must(guards_backoff_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_backoff(&c, "config.", &cfg);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_backoff_new(&cfg, &backoff);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    must(guards_backoff_reseed(backoff, u64_arg(d, "seed")), "guards_backoff_reseed");
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_backoff_free(backoff);
    backoff = NULL;
    return submit(d);
  }
  uint64_t x = 0;
  if (is_op(d, "ceiling"))
    return answer(d, guards_backoff_ceiling(backoff, (uint32_t)u64_arg(d, "retry"), &x), &x);
  if (is_op(d, "max_delay"))
    return answer(d, guards_backoff_max_delay(backoff, (uint32_t)u64_arg(d, "retry"), &x), &x);
  if (is_op(d, "delay"))
    return answer(d,
                  guards_backoff_delay(backoff, (uint32_t)u64_arg(d, "retry"),
                                       u64_or(d, "prev", 0), &x),
                  &x);
  if (is_op(d, "delay_from_bits"))
    return answer(d,
                  guards_backoff_delay_from_bits(backoff, (uint32_t)u64_arg(d, "retry"),
                                                 u64_or(d, "prev", 0), u64_arg(d, "bits"), &x),
                  &x);
  if (is_op(d, "rng_next_u64")) return answer(d, guards_backoff_next_u64(backoff, &x), &x);
  size_t len = 0;
  if (is_op(d, "fnv1a64")) {
    const char *id = str_arg(d, "id", &len);
    return answer(d, guards_key_of(id, len, &x), &x);
  }
  if (is_op(d, "stable_offset")) {
    const char *id = str_arg(d, "id", &len);
    return answer(d, guards_stable_offset(id, len, u64_arg(d, "period"), &x), &x);
  }
  if (is_op(d, "next_stable_run")) {
    const char *id = str_arg(d, "id", &len);
    return answer(d,
                  guards_next_stable_run(id, len, u64_arg(d, "period"), u64_arg(d, "now"), &x),
                  &x);
  }
  return unsupported(d, "an op the C backoff does not have");
}
