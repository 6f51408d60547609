/* The wait queue: Basketly C5's standing queue (100 ms), 5 ms age limit, adaptive LIFO,
 * priority, deadline drop at dequeue. Single owner: this test is its only user. */
#include "test.h"

#define VIEW 3
#define RESERVE 1

static guards_queue_discipline *queue_of(uint32_t capacity) {
  guards_queue_discipline_config c;
  memset(&c, 0xAB, sizeof c);
  CHECK_RC(guards_queue_discipline_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.capacity == 128 && c.interval_ns == 100 * MS && c.target_ns == 5 * MS);
  CHECK(c.lifo && c.codel && c.priority);
  c.capacity = capacity;
  guards_queue_discipline *q = NULL;
  CHECK_RC(guards_queue_discipline_new(&c, &q), GUARDS_RESULT_OK);
  return q;
}

static guards_dequeued pop(guards_queue_discipline *q, uint64_t now) {
  guards_dequeued d;
  memset(&d, 0, sizeof d);
  CHECK_RC(guards_queue_discipline_pop(q, now, &d), GUARDS_RESULT_OK);
  return d;
}

/* Core's example, step by step. */
static void test_seed_c5(void) {
  guards_queue_discipline *q = queue_of(128);
  CHECK_RC(guards_queue_discipline_push(q, 0, 1, VIEW, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_push(q, 1 * MS, 2, VIEW, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_push(q, 2 * MS, 3, RESERVE, 60 * MS), GUARDS_RESULT_OK);
  /* A short burst: FIFO, and the waiting reserve goes before any view. */
  guards_dequeued d = pop(q, 3 * MS);
  CHECK(d.waiter.id == 3 && d.order == GUARDS_SERVE_ORDER_FIFO && d.waiter.priority == RESERVE);
  CHECK(d.waiter.deadline_ns == 60 * MS && d.waiter.enqueued_at_ns == 2 * MS);
  CHECK(pop(q, 4 * MS).waiter.id == 1);

  /* Not empty since 0 ms: at 120 ms it stands; waiter 2 (119 ms old) is dropped and the
   * newest is served first. */
  CHECK_RC(guards_queue_discipline_push(q, 118 * MS, 4, VIEW, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_push(q, 119 * MS, 5, VIEW, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  guards_queue_discipline_state st;
  CHECK_RC(guards_queue_discipline_get_state(q, 120 * MS, &st), GUARDS_RESULT_OK);
  CHECK(st.standing == 1 && st.len == 3 && st.len_by_priority[VIEW] == 3);
  CHECK(st.oldest_age_ns == 119 * MS);
  d = pop(q, 120 * MS);
  CHECK(d.waiter.id == 5 && d.order == GUARDS_SERVE_ORDER_LIFO);
  guards_dropped dropped[4];
  size_t n = 0;
  CHECK_RC(guards_queue_discipline_dropped(q, dropped, 4, &n), GUARDS_RESULT_OK);
  CHECK(n == 1 && dropped[0].waiter.id == 2 && dropped[0].reason == GUARDS_DROP_REASON_AGE_LIMIT);
  /* Too small a buffer: nothing copied, the count reported. */
  n = 0;
  CHECK_RC(guards_queue_discipline_dropped(q, NULL, 0, &n), GUARDS_RESULT_BUFFER_TOO_SMALL);
  CHECK(n == 1);
  guards_queue_discipline_stats s;
  CHECK_RC(guards_queue_discipline_get_stats(q, &s), GUARDS_RESULT_OK);
  CHECK(s.dropped_age_limit == 1 && s.served_fifo == 2 && s.served_lifo == 1);
  CHECK(s.enqueued == 5);
  CHECK_RC(guards_queue_discipline_get_state(q, 120 * MS, &st), GUARDS_RESULT_OK);
  CHECK(st.len == 1);
  /* The counters add up: enqueued = served + dropped + cancelled + waiting. */
  CHECK(s.enqueued == s.served_fifo + s.served_lifo + s.dropped_age_limit + s.dropped_deadline +
                          s.cancelled + st.len);
  guards_queue_discipline_free(q);
}

static void test_full_deadline_remove_expire(void) {
  guards_queue_discipline *q = queue_of(2);
  CHECK_RC(guards_queue_discipline_push(q, S, 10, VIEW, S + 5 * MS), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_push(q, S, 11, VIEW, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_push(q, S, 12, VIEW, GUARDS_NO_DEADLINE), GUARDS_RESULT_QUEUE_FULL);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_QUEUE_FULL && r.key == 12 && r.limit == 2);
  /* Waiter 10's deadline passes: it is dropped at dequeue and 11 served. */
  guards_dequeued d = pop(q, S + 6 * MS);
  CHECK(d.waiter.id == 11);
  guards_dropped dropped[2];
  size_t n = 0;
  CHECK_RC(guards_queue_discipline_dropped(q, dropped, 2, &n), GUARDS_RESULT_OK);
  CHECK(n == 1 && dropped[0].waiter.id == 10 && dropped[0].reason == GUARDS_DROP_REASON_DEADLINE);
  guards_dequeued none;
  memset(&none, 0x55, sizeof none);
  guards_dequeued before = none;
  CHECK_RC(guards_queue_discipline_pop(q, S + 7 * MS, &none), GUARDS_RESULT_EMPTY);
  CHECK(memcmp(&none, &before, sizeof none) == 0);

  /* Remove (a caller gave up) and expire (a timer sweep). */
  CHECK_RC(guards_queue_discipline_push(q, 2 * S, 20, 0, 2 * S + MS), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_push(q, 2 * S, 21, 7, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  guards_waiter w;
  CHECK_RC(guards_queue_discipline_remove(q, 21, &w), GUARDS_RESULT_OK);
  CHECK(w.id == 21 && w.priority == 7 && w.deadline_ns == GUARDS_NO_DEADLINE);
  CHECK_RC(guards_queue_discipline_remove(q, 21, &w), GUARDS_RESULT_NOT_FOUND);
  uint32_t expired = 0;
  CHECK_RC(guards_queue_discipline_expire(q, 2 * S + MS, &expired), GUARDS_RESULT_OK);
  CHECK(expired == 1);
  CHECK_RC(guards_queue_discipline_dropped(q, dropped, 2, &n), GUARDS_RESULT_OK);
  CHECK(n == 1 && dropped[0].waiter.id == 20);
  CHECK_RC(guards_queue_discipline_push(q, S, 1, 8, GUARDS_NO_DEADLINE), GUARDS_RESULT_INVALID_ARGUMENT);
  guards_queue_discipline_stats s;
  CHECK_RC(guards_queue_discipline_get_stats(q, &s), GUARDS_RESULT_OK);
  CHECK(s.rejected_full == 1 && s.dropped_deadline == 2 && s.cancelled == 1 && s.enqueued == 4);
  guards_queue_discipline_config got;
  CHECK_RC(guards_queue_discipline_get_config(q, &got), GUARDS_RESULT_OK);
  CHECK(got.capacity == 2);
  /* Waiters still queued when the queue is freed are freed with it. */
  CHECK_RC(guards_queue_discipline_push(q, 3 * S, 30, 0, GUARDS_NO_DEADLINE), GUARDS_RESULT_OK);
  guards_queue_discipline_free(q);
}

void queue_discipline_tests(void) {
  run("queue_discipline_seed_c5", test_seed_c5);
  run("queue_discipline_full_deadline_remove_expire", test_full_deadline_remove_expire);
}
