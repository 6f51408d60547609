/* Install test of the C release tarball (make test-dist-c): built with nothing but
 * `pkg-config --cflags --libs guards` against the unpacked tree. A breaker opens after its
 * window of failures and refuses; a bulkhead of one refuses a second call. Exits non-zero
 * on any surprise. */
#include <guards.h>
#include <stdio.h>
#include <stdlib.h>

#define MS 1000000ull

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "smoke: FAILED: %s\n", what);
    failures++;
  }
}

int main(void) {
  guards_circuit_breaker_config bc;
  guards_circuit_breaker *b = NULL;
  guards_permit p;
  guards_breaker_state st = GUARDS_BREAKER_STATE_CLOSED;
  uint64_t t = 1000 * MS;
  int i;

  printf("libguards %s\n", guards_version());
  expect(guards_circuit_breaker_config_default(&bc) == GUARDS_RESULT_OK, "breaker config");
  bc.window_size = 4;
  bc.minimum_calls = 4;
  expect(guards_circuit_breaker_new(&bc, &b) == GUARDS_RESULT_OK && b != NULL, "breaker new");
  if (b == NULL) return 1;
  for (i = 0; i < 4; i++, t += MS) {
    expect(guards_circuit_breaker_try_acquire(b, t, &p) == GUARDS_RESULT_OK, "closed breaker admits");
    expect(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_TIMEOUT, t) == GUARDS_RESULT_OK, "report");
  }
  expect(guards_circuit_breaker_state(b, t, &st) == GUARDS_RESULT_OK, "state");
  expect(st == GUARDS_BREAKER_STATE_OPEN, "breaker open after 4 timeouts of 4");
  expect(guards_circuit_breaker_try_acquire(b, t, &p) == GUARDS_RESULT_BREAKER_OPEN, "open breaker refuses");
  printf("breaker: open after 4 timeouts, next call refused (BREAKER_OPEN)\n");
  guards_circuit_breaker_free(b);

  {
    guards_bulkhead_config kc;
    guards_bulkhead *k = NULL;
    guards_permit first, second;
    expect(guards_bulkhead_config_default(&kc) == GUARDS_RESULT_OK, "bulkhead config");
    kc.max_concurrent = 1;
    expect(guards_bulkhead_new(&kc, &k) == GUARDS_RESULT_OK && k != NULL, "bulkhead new");
    if (k == NULL) return 1;
    expect(guards_bulkhead_try_acquire(k, &first) == GUARDS_RESULT_OK, "bulkhead admits one");
    expect(guards_bulkhead_try_acquire(k, &second) == GUARDS_RESULT_BULKHEAD_FULL, "bulkhead refuses the second");
    printf("bulkhead: second call refused while one is in flight (BULKHEAD_FULL)\n");
    expect(guards_bulkhead_release(k, first) == GUARDS_RESULT_OK, "release");
    expect(guards_bulkhead_try_acquire(k, &second) == GUARDS_RESULT_OK, "bulkhead admits after release");
    expect(guards_bulkhead_release(k, second) == GUARDS_RESULT_OK, "release");
    guards_bulkhead_free(k);
  }
  if (failures) {
    fprintf(stderr, "smoke: %d check(s) failed\n", failures);
    return 1;
  }
  printf("smoke: ok\n");
  return 0;
}
