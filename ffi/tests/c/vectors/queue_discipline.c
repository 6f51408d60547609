/* queue_discipline.json: a guards_queue_discipline (the file's `capacity`). */
#include "vectors.h"

static guards_queue_discipline *queue;

/* The waiters the latest pop or expire dropped, as the list at `p`; a failing call's
 * code, or GUARDS_RESULT_OK. */
static guards_result dropped(driver *d, const char *p) {
  size_t n = 0;
  guards_result rc = guards_queue_discipline_dropped(queue, NULL, 0, &n);
  if (rc != GUARDS_RESULT_OK && rc != GUARDS_RESULT_BUFFER_TOO_SMALL) return rc;
  if (n == 0) {
    result_empty_list(d, p);
    return GUARDS_RESULT_OK;
  }
  guards_dropped buf[256];
  if (n > sizeof buf / sizeof buf[0]) fatal("more drops than the driver's buffer");
  rc = guards_queue_discipline_dropped(queue, buf, n, &n);
  if (rc != GUARDS_RESULT_OK) return rc;
  for (size_t i = 0; i < n; i++) {
    result_u64(d, path("%s[%zu].id", p, i), buf[i].waiter.id);
    result_str(d, path("%s[%zu].reason", p, i),
               buf[i].reason == GUARDS_DROP_REASON_AGE_LIMIT ? "age_limit" : "deadline");
  }
  return GUARDS_RESULT_OK;
}

int run_queue_discipline(driver *d) {
  if (is_op(d, "new")) {
    guards_queue_discipline_config cfg;
    must(guards_queue_discipline_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_u32(&c, "config.capacity", &cfg.capacity);
    cfg_u64(&c, "config.interval", &cfg.interval_ns);
    cfg_u64(&c, "config.target", &cfg.target_ns);
    cfg_bool(&c, "config.lifo", &cfg.lifo);
    cfg_bool(&c, "config.codel", &cfg.codel);
    cfg_bool(&c, "config.priority", &cfg.priority);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_queue_discipline_new(&cfg, &queue);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_queue_discipline_free(queue);
    queue = NULL;
    return submit(d);
  }
  uint64_t now = u64_or(d, "now", 0);
  if (is_op(d, "push")) {
    uint64_t deadline = has(d, "deadline") && !is_null(d, "deadline") ? u64_arg(d, "deadline")
                                                                        : GUARDS_NO_DEADLINE;
    guards_result rc = guards_queue_discipline_push(queue, now, u64_arg(d, "id"),
                                                    (uint32_t)u64_arg(d, "priority"), deadline);
    if (rc == GUARDS_RESULT_QUEUE_FULL) result_bool(d, "", false);
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_bool(d, "", true);
    return submit(d);
  }
  if (is_op(d, "pop")) {
    guards_dequeued s;
    guards_result rc = guards_queue_discipline_pop(queue, now, &s);
    if (rc == GUARDS_RESULT_EMPTY) {
      result_null(d, "served");
    } else if (rc != GUARDS_RESULT_OK) {
      return submit_failure(d, rc);
    } else {
      result_u64(d, "served.id", s.waiter.id);
      result_str(d, "served.order", s.order == GUARDS_SERVE_ORDER_FIFO ? "fifo" : "lifo");
    }
    rc = dropped(d, "dropped");
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "expire")) {
    uint32_t n = 0;
    guards_result rc = guards_queue_discipline_expire(queue, now, &n);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    rc = dropped(d, "dropped");
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "remove")) {
    guards_waiter w;
    guards_result rc = guards_queue_discipline_remove(queue, u64_arg(d, "id"), &w);
    if (rc == GUARDS_RESULT_NOT_FOUND) result_bool(d, "", false);
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_bool(d, "", true);
    return submit(d);
  }
  if (is_op(d, "len") || is_op(d, "len_by_priority") || is_op(d, "oldest_age") ||
      is_op(d, "is_standing")) {
    guards_queue_discipline_state st;
    guards_result rc = guards_queue_discipline_get_state(queue, now, &st);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (is_op(d, "len")) result_u64(d, "", st.len);
    else if (is_op(d, "oldest_age")) result_u64(d, "", st.oldest_age_ns);
    else if (is_op(d, "is_standing")) result_bool(d, "", st.standing != 0);
    else
      for (size_t i = 0; i < 8; i++) result_u64(d, path("[%zu]", i), st.len_by_priority[i]);
    return submit(d);
  }
  if (is_op(d, "stats")) {
    guards_queue_discipline_stats s;
    guards_result rc = guards_queue_discipline_get_stats(queue, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "enqueued", s.enqueued);
    result_u64(d, "served_fifo", s.served_fifo);
    result_u64(d, "served_lifo", s.served_lifo);
    result_u64(d, "dropped_age_limit", s.dropped_age_limit);
    result_u64(d, "dropped_deadline", s.dropped_deadline);
    result_u64(d, "cancelled", s.cancelled);
    result_u64(d, "rejected_full", s.rejected_full);
    return submit(d);
  }
  return unsupported(d, "an op the C queue does not have");
}
