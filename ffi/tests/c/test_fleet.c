/* The fleet API against a real redis-server started on a free loopback port (installed by
 * `make redis-server`) and killed at the end: two members share an allowance of 6. */
#include "test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) close(s);
  return port;
}

static int can_connect(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
  if (s >= 0) close(s);
  return ok;
}

static void nap(void) {
  struct timespec t = {0, 25 * 1000 * 1000};
  nanosleep(&t, NULL);
}

static uint64_t share_of(guards_fleet *f) {
  uint64_t share = 99, fair = 99;
  if (guards_fleet_get_share(f, "stock", &share, &fair) != GUARDS_RESULT_OK) return 99;
  return share;
}

static void test_two_members(void) {
  int port = free_port();
  CHECK(port > 0);
  char port_s[16], url[64];
  snprintf(port_s, sizeof port_s, "%d", port);
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  char *argv[] = {"redis-server", "--port", port_s, "--bind", "127.0.0.1", "--save", "",
                  "--appendonly", "no", "--loglevel", "warning", NULL};
  pid_t pid;
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  int spawned = posix_spawnp(&pid, "redis-server", &quiet, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&quiet);
  CHECK(spawned == 0); /* redis-server missing: run `make redis-server` */
  if (spawned != 0) return;
  int up = 0;
  for (int i = 0; i < 800 && !up; i++) {
    up = can_connect(port);
    if (!up) nap();
  }
  CHECK(up);

  guards_bulkhead_config cfg;
  CHECK_RC(guards_bulkhead_config_default(&cfg), GUARDS_RESULT_OK);
  guards_bulkhead *ba = NULL, *bb = NULL;
  CHECK_RC(guards_bulkhead_new(&cfg, &ba), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_new(&cfg, &bb), GUARDS_RESULT_OK);
  guards_fleet *a = NULL, *b = NULL;
  CHECK_RC(guards_fleet_join(url, "shop", "a", 50, &a), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_join(url, "shop", "b", 50, &b), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_bulkhead(a, "stock", 6, ba), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_bulkhead(b, "stock", 6, bb), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_bulkhead(a, "stock", 6, ba), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_fleet_attach_bulkhead(a, "other", 0, ba), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("allowance"));
  int even = 0;
  for (int i = 0; i < 800 && !even; i++) {
    even = share_of(a) == 3 && share_of(b) == 3;
    if (!even) nap();
  }
  CHECK(even);
  /* The share is the bulkhead's cap: three calls, not four. */
  guards_permit p[4];
  for (int i = 0; i < 3; i++) CHECK_RC(guards_bulkhead_try_acquire(ba, &p[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(ba, &p[3]), GUARDS_RESULT_BULKHEAD_FULL);
  for (int i = 0; i < 3; i++) CHECK_RC(guards_bulkhead_release(ba, p[i]), GUARDS_RESULT_OK);
  guards_fleet_stats s;
  CHECK_RC(guards_fleet_get_stats(a, &s), GUARDS_RESULT_OK);
  CHECK(s.members == 2 && s.connected == 1 && s.fallen_back == 0 && s.syncs > 0);
  uint64_t share = 0;
  CHECK_RC(guards_fleet_get_share(a, "nope", &share, NULL), GUARDS_RESULT_NOT_FOUND);
  /* A limiter's ceiling and a token budget's burst follow their shares the same way. */
  guards_limiter_config lc;
  CHECK_RC(guards_limiter_config_default(&lc), GUARDS_RESULT_OK);
  guards_limiter *la = NULL, *lb = NULL;
  CHECK_RC(guards_limiter_new(&lc, &la), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_new(&lc, &lb), GUARDS_RESULT_OK);
  guards_retry_budget_config rc;
  CHECK_RC(guards_retry_budget_config_default(&rc), GUARDS_RESULT_OK);
  guards_retry_budget *ra = NULL, *rb = NULL, *grpc = NULL;
  CHECK_RC(guards_retry_budget_new(&rc, &ra), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_new(&rc, &rb), GUARDS_RESULT_OK);
  rc.mode = GUARDS_RETRY_BUDGET_MODE_GRPC;
  CHECK_RC(guards_retry_budget_new(&rc, &grpc), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_limiter(a, "search", 4, la), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_limiter(b, "search", 4, lb), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_retry_budget(a, "retries", 8, ra), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_retry_budget(b, "retries", 8, rb), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_retry_budget(a, "g", 8, grpc), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("budget"));
  CHECK_RC(guards_fleet_attach_retry_budget(a, "big", 2000000000ull, ra),
           GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("allowance"));
  CHECK_RC(guards_fleet_attach_limiter(a, "x", 4, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  int split = 0;
  for (int i = 0; i < 800 && !split; i++) {
    uint64_t l1 = 0, l2 = 0, t1 = 0, t2 = 0;
    guards_fleet_get_share(a, "search", &l1, NULL);
    guards_fleet_get_share(b, "search", &l2, NULL);
    guards_fleet_get_share(a, "retries", &t1, NULL);
    guards_fleet_get_share(b, "retries", &t2, NULL);
    split = l1 == 2 && l2 == 2 && t1 == 4 && t2 == 4;
    if (!split) nap();
  }
  CHECK(split);
  guards_permit lp[3];
  for (int i = 0; i < 2; i++) CHECK_RC(guards_limiter_try_acquire(la, 0, 1, &lp[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_try_acquire(la, 0, 1, &lp[2]), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  for (int i = 0; i < 2; i++)
    CHECK_RC(guards_limiter_report(la, lp[i], GUARDS_OUTCOME_SUCCESS, 1000), GUARDS_RESULT_OK);
  /* The burst was emptied at attach; deposits fill it to the share (4 tokens), no more. */
  for (int i = 0; i < 100; i++) CHECK_RC(guards_retry_budget_deposit(ra, 0), GUARDS_RESULT_OK);
  int64_t micros = 0;
  CHECK_RC(guards_retry_budget_tokens_micros(ra, 0, &micros), GUARDS_RESULT_OK);
  CHECK(micros == 4000000);
  /* Breakers attach to the fleet's evidence under their own names. */
  guards_circuit_breaker_config bc;
  CHECK_RC(guards_circuit_breaker_config_default(&bc), GUARDS_RESULT_OK);
  guards_circuit_breaker *cba = NULL, *cbb = NULL;
  CHECK_RC(guards_circuit_breaker_new(&bc, &cba), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_new(&bc, &cbb), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_breaker(a, "pay", cba), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_breaker(b, "pay", cbb), GUARDS_RESULT_OK);
  CHECK_RC(guards_fleet_attach_breaker(a, "stock", cba), GUARDS_RESULT_OK); /* not an allowance */
  CHECK_RC(guards_fleet_attach_breaker(a, "pay", cba), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("name"));
  CHECK_RC(guards_fleet_attach_breaker(a, "bad name", cba), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("breaker name"));
  CHECK_RC(guards_fleet_attach_breaker(a, "x", NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("breaker"));
  CHECK_RC(guards_fleet_attach_breaker(a, NULL, cba), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("name"));
  CHECK_RC(guards_fleet_attach_breaker(NULL, "x", cba), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("fleet"));
  /* Two members, no failures: the agent syncs and leaves the breakers closed. */
  CHECK_RC(guards_fleet_get_stats(a, &s), GUARDS_RESULT_OK);
  uint64_t synced = s.syncs;
  for (int i = 0; i < 800 && s.syncs < synced + 3; i++) {
    nap();
    CHECK_RC(guards_fleet_get_stats(a, &s), GUARDS_RESULT_OK);
  }
  CHECK(s.syncs >= synced + 3);
  guards_breaker_state st = GUARDS_BREAKER_STATE_OPEN;
  CHECK_RC(guards_circuit_breaker_state(cba, guards_now_ns(), &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_CLOSED);
  /* b leaves: a grows to the whole allowance. */
  guards_fleet_leave(b);
  int whole = 0;
  for (int i = 0; i < 800 && !whole; i++) {
    whole = share_of(a) == 6;
    if (!whole) nap();
  }
  CHECK(whole);
  guards_fleet_leave(a);
  guards_fleet_leave(NULL);
  guards_bulkhead_free(ba);
  guards_bulkhead_free(bb);
  guards_limiter_free(la);
  guards_limiter_free(lb);
  guards_retry_budget_free(ra);
  guards_retry_budget_free(rb);
  guards_retry_budget_free(grpc);
  guards_circuit_breaker_free(cba);
  guards_circuit_breaker_free(cbb);

  /* Bad input: typed errors, never a crash. */
  guards_fleet *x = NULL;
  CHECK_RC(guards_fleet_join(NULL, "shop", "a", 0, &x), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_fleet_join("http://nope", "shop", "a", 0, &x), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("url"));
  CHECK_RC(guards_fleet_join(url, "bad name", "a", 0, &x), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("service"));
  CHECK_RC(guards_fleet_join(url, "shop", "a", 5, &x), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_fleet_join(url, "shop", "a", 0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  char closed[64];
  snprintf(closed, sizeof closed, "redis://127.0.0.1:%d", free_port());
  CHECK_RC(guards_fleet_join(closed, "shop", "a", 0, &x), GUARDS_RESULT_FLEET_UNAVAILABLE);
  CHECK(x == NULL);
}

static void test_resize(void) {
  guards_bulkhead_config cfg;
  CHECK_RC(guards_bulkhead_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.max_concurrent = 2;
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_new(&cfg, &h), GUARDS_RESULT_OK);
  guards_permit p[2], q;
  for (int i = 0; i < 2; i++) CHECK_RC(guards_bulkhead_try_acquire(h, &p[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_set_max_concurrent(h, 1), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_release(h, p[0]), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &q), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK_RC(guards_bulkhead_set_max_concurrent(h, 3), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &q), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_set_max_concurrent(h, 1ull << 40), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(detail_has("max_concurrent"));
  CHECK_RC(guards_bulkhead_set_max_concurrent(NULL, 1), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_release(h, q), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_release(h, p[1]), GUARDS_RESULT_OK);
  guards_bulkhead_free(h);
}

static void test_limiter_and_budget_resize(void) {
  guards_limiter_config lc;
  CHECK_RC(guards_limiter_config_default(&lc), GUARDS_RESULT_OK);
  guards_limiter *l = NULL;
  CHECK_RC(guards_limiter_new(&lc, &l), GUARDS_RESULT_OK);
  uint64_t prev = 0;
  CHECK_RC(guards_limiter_set_max_limit(l, 1, &prev), GUARDS_RESULT_OK);
  CHECK(prev == UINT64_MAX);
  guards_permit p, q;
  CHECK_RC(guards_limiter_try_acquire(l, 0, 1, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_try_acquire(l, 0, 1, &q), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  CHECK_RC(guards_limiter_set_max_limit(l, UINT64_MAX, &prev), GUARDS_RESULT_OK);
  CHECK(prev == 1);
  CHECK_RC(guards_limiter_try_acquire(l, 0, 1, &q), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_set_max_limit(l, 1ull << 40, NULL), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(detail_has("max_limit"));
  CHECK_RC(guards_limiter_set_max_limit(NULL, 1, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limiter_report(l, p, GUARDS_OUTCOME_SUCCESS, 1000), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_report(l, q, GUARDS_OUTCOME_SUCCESS, 1000), GUARDS_RESULT_OK);
  guards_limiter_free(l);

  guards_retry_budget_config rc;
  CHECK_RC(guards_retry_budget_config_default(&rc), GUARDS_RESULT_OK);
  guards_retry_budget *b = NULL, *g = NULL;
  CHECK_RC(guards_retry_budget_new(&rc, &b), GUARDS_RESULT_OK);
  /* Full at 10 tokens; shrunk to 1, one retry goes and the next does not. */
  CHECK_RC(guards_retry_budget_set_capacity(b, 1.0), GUARDS_RESULT_OK);
  guards_retry_receipt r;
  CHECK_RC(guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &r), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &r),
           GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED);
  CHECK_RC(guards_retry_budget_set_capacity(b, -1.0), GUARDS_RESULT_CONFIG_NEGATIVE);
  CHECK(detail_has("capacity"));
  CHECK_RC(guards_retry_budget_set_capacity(b, 2e9), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK_RC(guards_retry_budget_set_capacity(NULL, 1.0), GUARDS_RESULT_NULL_ARGUMENT);
  rc.mode = GUARDS_RETRY_BUDGET_MODE_GRPC;
  CHECK_RC(guards_retry_budget_new(&rc, &g), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_set_capacity(g, 1.0), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("budget"));
  guards_retry_budget_free(b);
  guards_retry_budget_free(g);
}

void fleet_tests(void) {
  run("limiter_and_budget_resize", test_limiter_and_budget_resize);
  run("bulkhead_resize", test_resize);
  run("fleet_two_members", test_two_members);
}
