/* deadline.json: the deadline functions (an instant as a uint64_t, GUARDS_NO_DEADLINE for
 * none) and the wire forms. The case's attempt settings (`attempt_timeout`, `margin`) are
 * what guards_deadline_attempt_budget takes; `new` checks them with it. */
#include <string.h>

#include "vectors.h"

static guards_deadline_config config;

/* A deadline argument: an instant, or null (absent) for none. */
static uint64_t deadline_arg(driver *d, const char *name) {
  return (!has(d, name) || is_null(d, name)) ? GUARDS_NO_DEADLINE : u64_arg(d, name);
}

static void result_deadline(driver *d, const char *p, uint64_t x) {
  if (x == GUARDS_NO_DEADLINE) result_null(d, p);
  else result_u64(d, p, x);
}

/* The rule a header value broke, from the failure's detail. */
static const char *header_error(void) {
  static const char *const names[] = {"too_many_digits", "invalid_character", "missing_unit",
                                      "unknown_unit",    "no_digits",         "overflow",
                                      "empty"};
  char detail[512];
  guards_last_error_detail(detail, sizeof detail);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strstr(detail, names[i])) return names[i];
  return "unnamed";
}

static int parsed(driver *d, guards_result rc, const uint64_t *x, bool is_deadline) {
  if (rc == GUARDS_RESULT_INVALID_HEADER) {
    result_str(d, "error", header_error());
    return submit(d);
  }
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  if (is_deadline) result_deadline(d, "ok", *x);
  else result_u64(d, "ok", *x);
  return submit(d);
}

static int formatted(driver *d, guards_result rc, const char *buf) {
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  result_str(d, "", buf);
  return submit(d);
}

int run_deadline(driver *d) {
  if (is_op(d, "new")) {
    must(guards_deadline_config_default(&config), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_u64(&c, "config.attempt_timeout", &config.attempt_timeout_ns);
    cfg_u64(&c, "config.margin", &config.margin_ns);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_attempt_budget b;
    guards_result rc = guards_deadline_attempt_budget(&config, GUARDS_NO_DEADLINE, 0, &b);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) return submit(d);
  char buf[GUARDS_HEADER_VALUE_MAX];
  size_t len = 0;
  uint64_t x = 0;
  if (is_op(d, "after")) {
    result_deadline(d, "", guards_deadline_after(u64_arg(d, "now"), u64_arg(d, "timeout")));
    return submit(d);
  }
  if (is_op(d, "time_left") || is_op(d, "is_expired")) {
    uint64_t left = guards_deadline_time_left(deadline_arg(d, "deadline"), u64_arg(d, "now"));
    if (is_op(d, "is_expired")) result_bool(d, "", left == 0);
    else result_deadline(d, "", left);
    return submit(d);
  }
  if (is_op(d, "min")) {
    /* Instants with GUARDS_NO_DEADLINE (the largest) for none: the earlier is the smaller. */
    uint64_t a = deadline_arg(d, "a"), b = deadline_arg(d, "b");
    result_deadline(d, "", a < b ? a : b);
    return submit(d);
  }
  if (is_op(d, "attempt_budget")) {
    guards_attempt_budget b;
    guards_result rc = guards_deadline_attempt_budget(&config, deadline_arg(d, "deadline"),
                                                      u64_arg(d, "now"), &b);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (b.kind == GUARDS_ATTEMPT_BUDGET_KIND_START) {
      result_str(d, "decision", "start");
      result_u64(d, "budget", b.budget_ns);
    } else if (b.kind == GUARDS_ATTEMPT_BUDGET_KIND_EXPIRED) {
      result_str(d, "decision", "expired");
    } else {
      result_str(d, "decision", "too_little_left");
      result_deadline(d, "left", b.left_ns);
    }
    return submit(d);
  }
  if (is_op(d, "encode_grpc_timeout"))
    return formatted(d, guards_grpc_timeout_format(u64_arg(d, "timeout"), buf, sizeof buf, NULL),
                     buf);
  if (is_op(d, "encode_millis"))
    return formatted(d, guards_millis_format(u64_arg(d, "timeout"), buf, sizeof buf, NULL), buf);
  if (is_op(d, "to_grpc_timeout") || is_op(d, "to_millis")) {
    uint64_t left = guards_deadline_time_left(deadline_arg(d, "deadline"), u64_arg(d, "now"));
    if (left == GUARDS_NO_DEADLINE) {
      result_null(d, "");
      return submit(d);
    }
    guards_result rc = is_op(d, "to_millis")
                           ? guards_millis_format(left, buf, sizeof buf, NULL)
                           : guards_grpc_timeout_format(left, buf, sizeof buf, NULL);
    return formatted(d, rc, buf);
  }
  if (is_op(d, "parse_grpc_timeout")) {
    const char *s = str_arg(d, "value", &len);
    return parsed(d, guards_grpc_timeout_parse(s, len, &x), &x, false);
  }
  if (is_op(d, "parse_millis")) {
    const char *s = str_arg(d, "value", &len);
    return parsed(d, guards_millis_parse(s, len, &x), &x, false);
  }
  if (is_op(d, "from_grpc_timeout")) {
    const char *s = str_arg(d, "value", &len);
    return parsed(d, guards_deadline_from_grpc_timeout(u64_arg(d, "now"), s, len, &x), &x, true);
  }
  if (is_op(d, "from_millis")) {
    const char *s = str_arg(d, "value", &len);
    return parsed(d, guards_deadline_from_millis(u64_arg(d, "now"), s, len, &x), &x, true);
  }
  return unsupported(d, "an op the C deadline functions do not have");
}
