/*
 * guards-server: a small blocking HTTP/1.1 server in plain C that protects a slow
 * backend with libguards.
 *
 * Every request to /work goes through, in order:
 *   1. admission control: refused at the door when too many are inside
 *      (503 + Retry-After, before any work);
 *   2. its deadline, read from a `grpc-timeout` or an `x-timeout-ms` header (400 when the
 *      header is malformed, 504 when no time is left for an attempt);
 *   3. a circuit breaker around the backend (503 + Retry-After while it is open);
 *   4. a bulkhead capping the calls to the backend (503 when full);
 * then the backend call with the attempt's budget, whose outcome is reported to every
 * guard through the call contract (docs/outcomes.md).
 *
 * The backend is simulated in process: it takes --backend-ms to answer, and fails fast
 * while /admin/fail is in effect (until /admin/heal). /stats shows the guards' counters;
 * /admin/quit stops the server, which frees everything before it exits.
 *
 * Threads: a fixed pool, each blocking in accept() on the one listening socket and serving
 * one request per connection. The guards are shared by every thread: the libguards
 * handles are thread-safe and lock-free.
 *
 * Prefork (--workers N): N processes made with fork() accept on the one listening socket
 * (each with its own pool of threads), and share ONE breaker and ONE bulkhead through a
 * region file (--region PATH; default /dev/shm/guards-server-<pid>, removed at exit):
 * failures seen by one worker open the breaker for all, and the bulkhead caps the calls
 * of the whole host. Admission stays per worker. The first process supervises: it makes
 * a new worker when one dies (a dead worker's permits are reclaimed by the region).
 *
 * Build against the installed library (see README.md):
 *   make install PREFIX=$HOME/.local
 *   PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig make -C examples/c
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <guards.h>

#define MS 1000000ull
#define MAX_REQUEST 8192
#define MAX_THREADS 256
#define MAX_WORKERS 64

struct options {
  int port;
  int threads;
  uint64_t backend_ms;
  uint64_t admission_limit;
  uint64_t bulkhead;
  uint64_t attempt_timeout_ms;
  int workers;        /* 0: one process, threads only */
  const char *region; /* prefork: the region file (NULL: a unique name under /dev/shm) */
  int guards;         /* GUARD_ALL, GUARD_ADMISSION or GUARD_NONE (--guards) */
};

/* --guards: which guards a request to /work goes through (all four by default;
 * `admission`: the door only; `none`: straight to the backend, the baseline a benchmark
 * measures the guards' cost against). */
enum { GUARD_ALL, GUARD_ADMISSION, GUARD_NONE };

static struct options opt = {
    .port = 8080, .threads = 64, .backend_ms = 50, .admission_limit = 64, .bulkhead = 12,
    .attempt_timeout_ms = 1000,
};

/* What every worker process sees alike: in memory shared across fork() in prefork mode. */
struct host {
  atomic_int quitting;
  atomic_int backend_failing;
  atomic_long served_ok;
};

static struct host one_process;
static struct host *host = &one_process;

static guards_admission *door;
/* One process: private guards. Prefork: the region's shared ones. */
static guards_circuit_breaker *breaker;
static guards_bulkhead *bulkhead;
static guards_region *region;
static guards_region_guard *shared_breaker;
static guards_region_guard *shared_bulkhead;
static char region_path[256];
static pid_t supervisor; /* prefork: the first process */
static guards_deadline_config per_attempt;
static int listen_fd = -1;

/* ---- small helpers ---- */

static void die(const char *what, guards_result rc) {
  char detail[256];
  guards_last_error_detail(detail, sizeof detail);
  fprintf(stderr, "guards-server: %s: %s (%s)\n", what, guards_result_message(rc), detail);
  /* The supervisor removes the region it named itself. */
  if (supervisor == getpid() && !opt.region && region_path[0]) guards_region_remove(region_path);
  exit(1);
}

static void sleep_ns(uint64_t ns) {
  struct timespec t = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static void send_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n <= 0) return;
    buf += n;
    len -= (size_t)n;
  }
}

/* Answer `status` with `body`, and `extra` header lines (each ending in \r\n) if any. */
static void respond(int fd, int status, const char *reason, const char *extra, const char *body) {
  char head[1024];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\nX-Worker-Pid: %d\r\n%s\r\n",
                   status, reason, strlen(body), (int)getpid(), extra ? extra : "");
  if (n < 0 || (size_t)n >= sizeof head) return;
  send_all(fd, head, (size_t)n);
  send_all(fd, body, strlen(body));
}

/* The value of header `name` in the raw head `req` (NUL-terminated), without surrounding
 * spaces: its start and length, or NULL. */
static const char *header(const char *req, const char *name, size_t *len) {
  size_t nlen = strlen(name);
  const char *line = strstr(req, "\r\n");
  while (line && line[2] != '\r') {
    line += 2;
    const char *end = strstr(line, "\r\n");
    if (!end) return NULL;
    if ((size_t)(end - line) > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
      const char *v = line + nlen + 1;
      while (v < end && (*v == ' ' || *v == '\t')) v++;
      const char *e = end;
      while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
      *len = (size_t)(e - v);
      return v;
    }
    line = end;
  }
  return NULL;
}

/* 503 with a Retry-After for the refusal just made on this thread. */
static void refuse(int fd, const char *by, uint64_t now) {
  guards_rejection r;
  uint64_t secs = 1;
  if (guards_last_rejection(&r) == GUARDS_RESULT_OK && r.has_retry_at) {
    secs = guards_retry_after_secs(r.retry_at_ns, now);
    if (secs == 0) secs = 1;
  }
  char extra[128];
  snprintf(extra, sizeof extra, "Retry-After: %llu\r\nX-Refused-By: %s\r\n", (unsigned long long)secs, by);
  char detail[256];
  guards_last_error_detail(detail, sizeof detail);
  char body[320];
  snprintf(body, sizeof body, "%s\n", detail);
  respond(fd, 503, "Service Unavailable", extra, body);
}

/* The simulated backend: `opt.backend_ms` to answer, a fast failure while failing. Waits at
 * most `budget_ns`; returns the call's outcome. */
static uint32_t call_backend(uint64_t budget_ns) {
  if (atomic_load(&host->backend_failing)) {
    sleep_ns(1 * MS);
    return GUARDS_OUTCOME_OTHER_TRANSIENT;
  }
  uint64_t takes = opt.backend_ms * MS;
  if (takes > budget_ns) {
    sleep_ns(budget_ns);
    return GUARDS_OUTCOME_TIMEOUT;
  }
  if (takes > 0) sleep_ns(takes);
  return GUARDS_OUTCOME_SUCCESS;
}

/* ---- the breaker and the bulkhead: this process's own, or the host's (prefork) ---- */

static guards_result breaker_acquire(uint64_t now, guards_permit *p) {
  return shared_breaker ? guards_region_try_acquire(shared_breaker, 0, now, p)
                        : guards_circuit_breaker_try_acquire(breaker, now, p);
}

static void breaker_report(guards_permit p, uint32_t outcome, uint64_t now) {
  if (shared_breaker) guards_region_report(shared_breaker, p, outcome, now);
  else guards_circuit_breaker_report(breaker, p, outcome, now);
}

static guards_result bulkhead_acquire(uint64_t now, guards_permit *p) {
  return shared_bulkhead ? guards_region_try_acquire(shared_bulkhead, 0, now, p)
                         : guards_bulkhead_try_acquire(bulkhead, p);
}

static void bulkhead_report(guards_permit p, uint32_t outcome, uint64_t now) {
  if (shared_bulkhead) guards_region_report(shared_bulkhead, p, outcome, now);
  else guards_bulkhead_report(bulkhead, p, outcome);
}

/* ---- the guarded request ---- */

static uint64_t monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The answer to a backend call that ended with `outcome`, with its timing headers. */
static void answer(int fd, uint32_t outcome, uint64_t budget_ns, uint64_t started, uint64_t done) {
  char ms[GUARDS_HEADER_VALUE_MAX], extra[192];
  guards_millis_format(budget_ns, ms, sizeof ms, NULL);
  snprintf(extra, sizeof extra,
           "X-Attempt-Budget-Ms: %s\r\nX-Backend-Start-Ns: %llu\r\nX-Backend-End-Ns: %llu\r\n", ms,
           (unsigned long long)started, (unsigned long long)done);
  if (outcome == GUARDS_OUTCOME_SUCCESS) {
    atomic_fetch_add(&host->served_ok, 1);
    respond(fd, 200, "OK", extra, "ok\n");
  } else if (outcome == GUARDS_OUTCOME_TIMEOUT) {
    respond(fd, 504, "Gateway Timeout", extra, "the backend did not answer in time\n");
  } else {
    respond(fd, 502, "Bad Gateway", extra, "the backend failed\n");
  }
}

/* --guards none: the backend call with the attempt timeout, no guard on the way. */
static void unguarded(int fd) {
  uint64_t budget = opt.attempt_timeout_ms * MS;
  uint64_t started = monotonic_ns();
  uint32_t outcome = call_backend(budget);
  answer(fd, outcome, budget, started, monotonic_ns());
}

static void work(int fd, const char *req) {
  if (opt.guards == GUARD_NONE) {
    unguarded(fd);
    return;
  }
  uint64_t now = guards_now_ns();
  size_t len = 0;
  uint32_t priority = 1;
  const char *p = header(req, "x-priority", &len);
  if (p && len == 1 && p[0] >= '0' && p[0] <= '7') priority = (uint32_t)(p[0] - '0');

  /* 1. Admission, before any work. */
  guards_permit admitted;
  if (guards_admission_try_acquire(door, now, priority, &admitted) != GUARDS_RESULT_OK) {
    refuse(fd, "admission", now);
    return;
  }
  if (opt.guards == GUARD_ADMISSION) {
    /* --guards admission: the door only, then the backend with the attempt timeout. */
    uint64_t budget = opt.attempt_timeout_ms * MS;
    uint32_t outcome = call_backend(budget);
    uint64_t done = guards_now_ns();
    guards_admission_report(door, admitted, outcome, done);
    answer(fd, outcome, budget, now, done);
    return;
  }

  /* 2. The deadline the caller sent, and this attempt's budget. */
  uint64_t deadline = GUARDS_NO_DEADLINE;
  guards_result rc = GUARDS_RESULT_OK;
  if ((p = header(req, "grpc-timeout", &len)) != NULL) {
    rc = guards_deadline_from_grpc_timeout(now, p, len, &deadline);
  } else if ((p = header(req, "x-timeout-ms", &len)) != NULL) {
    rc = guards_deadline_from_millis(now, p, len, &deadline);
  }
  if (rc != GUARDS_RESULT_OK) {
    char detail[256], body[300];
    guards_last_error_detail(detail, sizeof detail);
    snprintf(body, sizeof body, "%s\n", detail);
    guards_admission_report(door, admitted, GUARDS_OUTCOME_IGNORED, guards_now_ns());
    respond(fd, 400, "Bad Request", NULL, body);
    return;
  }
  guards_attempt_budget budget;
  guards_deadline_attempt_budget(&per_attempt, deadline, now, &budget);
  if (budget.kind != GUARDS_ATTEMPT_BUDGET_KIND_START) {
    /* The caller has already given up: drop the work (an overload sample). */
    guards_admission_report(door, admitted, GUARDS_OUTCOME_TIMEOUT, guards_now_ns());
    respond(fd, 504, "Gateway Timeout", NULL, "deadline exceeded before the call\n");
    return;
  }

  /* 3. The breaker around the backend. */
  guards_permit call;
  if (breaker_acquire(now, &call) != GUARDS_RESULT_OK) {
    refuse(fd, "circuit_breaker", now);
    guards_admission_report(door, admitted, GUARDS_OUTCOME_REJECTED, guards_now_ns());
    return;
  }
  uint64_t timeout = budget.budget_ns;
  if (call.is_probe && call.probe_timeout_ns < timeout) timeout = call.probe_timeout_ns;

  /* 4. The bulkhead. */
  guards_permit slot;
  if (bulkhead_acquire(now, &slot) != GUARDS_RESULT_OK) {
    refuse(fd, "bulkhead", now);
    breaker_report(call, GUARDS_OUTCOME_REJECTED, guards_now_ns());
    guards_admission_report(door, admitted, GUARDS_OUTCOME_REJECTED, guards_now_ns());
    return;
  }

  /* The backend call, timed inside the bulkhead slot (monotonic clock, the same in every
   * process): the answer headers let a client count the calls in flight at once. */
  uint64_t started = guards_now_ns();
  uint32_t outcome = call_backend(timeout);
  uint64_t done = guards_now_ns();
  bulkhead_report(slot, outcome, done);
  breaker_report(call, outcome, done);
  guards_admission_report(door, admitted, outcome, done);
  answer(fd, outcome, budget.budget_ns, started, done);
}

static void stats(int fd) {
  guards_admission_stats a;
  guards_circuit_breaker_stats b;
  guards_bulkhead_stats h;
  guards_breaker_state st;
  uint64_t out_a = 0, out_b = 0;
  guards_admission_get_stats(door, &a);
  guards_admission_outstanding(door, &out_a);
  if (shared_breaker) {
    /* The host's breaker and bulkhead: every worker's calls together. */
    guards_region_guard_info bi, hi;
    guards_region_circuit_breaker_get_stats(shared_breaker, &b);
    guards_region_bulkhead_get_stats(shared_bulkhead, &h);
    guards_region_circuit_breaker_state(shared_breaker, guards_now_ns(), &st);
    guards_region_guard_get_info(shared_breaker, &bi);
    guards_region_guard_get_info(shared_bulkhead, &hi);
    out_b = bi.permits_held + hi.permits_held; /* every worker's permits (a scan) */
  } else {
    guards_circuit_breaker_get_stats(breaker, &b);
    guards_bulkhead_get_stats(bulkhead, &h);
    guards_circuit_breaker_state(breaker, guards_now_ns(), &st);
    guards_circuit_breaker_outstanding(breaker, &out_b);
    out_b += h.in_flight;
  }
  static const char *states[] = {"closed", "open", "half_open"};
  char body[1024];
  snprintf(body, sizeof body,
           "{\"admitted\": %llu, \"refused\": %llu, \"inside\": %llu, "
           "\"breaker\": \"%s\", \"breaker_failures\": %llu, \"breaker_rejected\": %llu, "
           "\"bulkhead_in_flight\": %llu, \"bulkhead_rejected\": %llu, "
           "\"outstanding_permits\": %llu, \"served_ok\": %ld, \"worker_pid\": %d, "
           "\"workers\": %d}\n",
           (unsigned long long)a.admitted,
           (unsigned long long)(a.refused_limit_reached + a.refused_overloaded),
           (unsigned long long)a.in_flight, st <= 2 ? states[st] : "?",
           (unsigned long long)b.failures, (unsigned long long)(b.rejected_open + b.rejected_half_open),
           (unsigned long long)h.in_flight, (unsigned long long)h.rejected,
           (unsigned long long)(out_a + out_b), atomic_load(&host->served_ok),
           (int)getpid(), opt.workers);
  respond(fd, 200, "OK", NULL, body);
}

static void serve(int fd) {
  struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char req[MAX_REQUEST + 1];
  size_t got = 0;
  while (got < MAX_REQUEST) {
    ssize_t n = recv(fd, req + got, MAX_REQUEST - got, 0);
    if (n <= 0) return;
    got += (size_t)n;
    req[got] = '\0';
    if (strstr(req, "\r\n\r\n")) break;
  }
  req[got] = '\0';
  if (!strstr(req, "\r\n\r\n")) {
    respond(fd, 431, "Request Header Fields Too Large", NULL, "request head too large\n");
    return;
  }
  char method[8], path[256];
  if (sscanf(req, "%7s %255s", method, path) != 2) {
    respond(fd, 400, "Bad Request", NULL, "malformed request line\n");
    return;
  }
  if (strcmp(path, "/work") == 0) {
    work(fd, req);
  } else if (strcmp(path, "/stats") == 0) {
    stats(fd);
  } else if (strcmp(path, "/admin/fail") == 0) {
    atomic_store(&host->backend_failing, 1);
    respond(fd, 200, "OK", NULL, "backend failing\n");
  } else if (strcmp(path, "/admin/heal") == 0) {
    atomic_store(&host->backend_failing, 0);
    respond(fd, 200, "OK", NULL, "backend healthy\n");
  } else if (strcmp(path, "/admin/quit") == 0) {
    respond(fd, 200, "OK", NULL, "bye\n");
    atomic_store(&host->quitting, 1);
    shutdown(listen_fd, SHUT_RDWR); /* wakes every accept() */
  } else {
    respond(fd, 404, "Not Found", NULL, "try /work, /stats, /admin/fail, /admin/heal, /admin/quit\n");
  }
}

static void *worker(void *arg) {
  (void)arg;
  while (!atomic_load(&host->quitting)) {
    int fd = accept(listen_fd, NULL, NULL);
    if (fd < 0) {
      if (atomic_load(&host->quitting)) break;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      sleep_ns(10 * MS);
      continue;
    }
    serve(fd);
    close(fd);
  }
  return NULL;
}

/* ---- set-up ---- */

static uint64_t number(const char *flag, const char *v) {
  char *end = NULL;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno || !end || *end || v[0] == '-') {
    fprintf(stderr, "guards-server: %s wants a number, not \"%s\"\n", flag, v);
    exit(2);
  }
  return (uint64_t)n;
}

static void parse(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "usage: guards-server [--port N] [--threads N] [--backend-ms N] "
                      "[--admission-limit N] [--bulkhead N] [--attempt-timeout-ms N] "
                      "[--workers N] [--region PATH] [--guards all|admission|none]\n");
      exit(2);
    }
    if (strcmp(a, "--port") == 0) opt.port = (int)number(a, v);
    else if (strcmp(a, "--threads") == 0) opt.threads = (int)number(a, v);
    else if (strcmp(a, "--backend-ms") == 0) opt.backend_ms = number(a, v);
    else if (strcmp(a, "--admission-limit") == 0) opt.admission_limit = number(a, v);
    else if (strcmp(a, "--bulkhead") == 0) opt.bulkhead = number(a, v);
    else if (strcmp(a, "--attempt-timeout-ms") == 0) opt.attempt_timeout_ms = number(a, v);
    else if (strcmp(a, "--workers") == 0) opt.workers = (int)number(a, v);
    else if (strcmp(a, "--region") == 0) opt.region = v;
    else if (strcmp(a, "--guards") == 0) {
      if (strcmp(v, "all") == 0) opt.guards = GUARD_ALL;
      else if (strcmp(v, "admission") == 0) opt.guards = GUARD_ADMISSION;
      else if (strcmp(v, "none") == 0) opt.guards = GUARD_NONE;
      else {
        fprintf(stderr, "guards-server: --guards wants all, admission or none, not \"%s\"\n", v);
        exit(2);
      }
    }
    else {
      fprintf(stderr, "guards-server: unknown option %s\n", a);
      exit(2);
    }
    i++;
  }
  if (opt.threads < 1 || opt.threads > MAX_THREADS || opt.port < 0 || opt.port > 65535 ||
      opt.workers < 0 || opt.workers > MAX_WORKERS) {
    fprintf(stderr, "guards-server: --threads 1..%d, --port 0..65535, --workers 0..%d\n",
            MAX_THREADS, MAX_WORKERS);
    exit(2);
  }
  if (opt.region && opt.workers == 0) {
    fprintf(stderr, "guards-server: --region goes with --workers N\n");
    exit(2);
  }
}

/* The breaker (Basketly's C6): the last 20 calls, open at 50 % for 5 s, 3 probes of 100 ms;
 * rates are judged from the 10th call on (the automatic minimum). */
static guards_circuit_breaker_config breaker_config(void) {
  guards_circuit_breaker_config bc;
  guards_circuit_breaker_config_default(&bc);
  bc.window_size = 20;
  bc.probe_timeout_ns = 100 * MS;
  return bc;
}

/* Prefork: the host's breaker and bulkhead, from the region (created by the first process
 * to ask, with this config; a region holding them with another config is refused). */
static void open_shared_guards(void) {
  guards_result rc;
  if ((rc = guards_region_open(region_path, NULL, &region)) != GUARDS_RESULT_OK) die("region", rc);
  guards_circuit_breaker_config bc = breaker_config();
  if ((rc = guards_region_circuit_breaker(region, "backend-breaker", &bc, &shared_breaker)) != GUARDS_RESULT_OK)
    die("shared circuit breaker", rc);
  guards_bulkhead_config hc = {.max_concurrent = opt.bulkhead};
  if ((rc = guards_region_bulkhead(region, "backend-bulkhead", &hc, &shared_bulkhead)) != GUARDS_RESULT_OK)
    die("shared bulkhead", rc);
}

static void close_shared_guards(void) {
  guards_region_guard_free(shared_breaker);
  guards_region_guard_free(shared_bulkhead);
  guards_region_close(region);
  shared_breaker = shared_bulkhead = NULL;
  region = NULL;
}

static void build_guards(void) {
  guards_result rc;
  /* Admission (Basketly's C5 shape): the same limit for every priority, Retry-After >= 1 s. */
  guards_admission_config ac;
  guards_admission_config_default(&ac);
  for (int i = 0; i < 8; i++) ac.limits[i] = opt.admission_limit;
  if ((rc = guards_admission_new(&ac, &door)) != GUARDS_RESULT_OK) die("admission", rc);
  if (opt.workers > 0) {
    open_shared_guards();
  } else {
    guards_circuit_breaker_config bc = breaker_config();
    if ((rc = guards_circuit_breaker_new(&bc, &breaker)) != GUARDS_RESULT_OK) die("circuit breaker", rc);
    /* The bulkhead (Basketly's C7: 12). */
    guards_bulkhead_config hc = {.max_concurrent = opt.bulkhead};
    if ((rc = guards_bulkhead_new(&hc, &bulkhead)) != GUARDS_RESULT_OK) die("bulkhead", rc);
  }
  guards_deadline_config_default(&per_attempt);
  per_attempt.attempt_timeout_ns = opt.attempt_timeout_ms * MS;
  guards_attempt_budget probe;
  if ((rc = guards_deadline_attempt_budget(&per_attempt, GUARDS_NO_DEADLINE, 0, &probe)) != GUARDS_RESULT_OK)
    die("--attempt-timeout-ms", rc);
}

/* Serve with this process's pool of threads until /admin/quit, then free its guards. */
static void serve_until_quit(void) {
  pthread_t threads[MAX_THREADS];
  int started = 0;
  for (; started < opt.threads; started++)
    if (pthread_create(&threads[started], NULL, worker, NULL) != 0) break;
  for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
  close(listen_fd);
  guards_admission_free(door);
  guards_circuit_breaker_free(breaker);
  guards_bulkhead_free(bulkhead);
  close_shared_guards();
}

static pid_t start_worker(void) {
  pid_t pid = fork();
  if (pid == 0) {
    build_guards(); /* this worker's own door and its handles on the host's guards */
    serve_until_quit();
    exit(0);
  }
  return pid;
}

/* Prefork: make the workers, make a new one when one dies, until /admin/quit; then wait
 * for all, remove the default region and report. */
static int supervise(void) {
  pid_t kids[MAX_WORKERS];
  for (int i = 0; i < opt.workers; i++) {
    kids[i] = start_worker();
    if (kids[i] < 0) {
      perror("guards-server: fork");
      return 1;
    }
  }
  int status_all = 0, alive = opt.workers;
  while (alive > 0) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < opt.workers; i++) {
      if (kids[i] != pid) continue;
      int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!atomic_load(&host->quitting)) {
        fprintf(stderr, "guards-server: worker %d died (status %d): starting another\n", (int)pid, status);
        kids[i] = start_worker();
        if (kids[i] > 0) break;
      }
      if (!clean) status_all = 1;
      kids[i] = -1;
      alive--;
      break;
    }
  }
  return status_all;
}

int main(int argc, char **argv) {
  parse(argc, argv);
  if (opt.workers > 0) {
    /* The flags and counters every worker shares, and the region of the host's guards. */
    void *m = mmap(NULL, sizeof(struct host), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      perror("guards-server: mmap");
      return 1;
    }
    host = m;
    supervisor = getpid();
    if (opt.region) snprintf(region_path, sizeof region_path, "%s", opt.region);
    else snprintf(region_path, sizeof region_path, "guards-server-%d", (int)getpid());
    /* Create the guards once here, so that a bad config stops the server before it forks. */
    open_shared_guards();
    close_shared_guards();
  } else {
    build_guards();
  }

  listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)opt.port);
  if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listen_fd, 1024) != 0) {
    perror("guards-server: bind/listen");
    return 1;
  }
  socklen_t alen = sizeof addr;
  getsockname(listen_fd, (struct sockaddr *)&addr, &alen);
  printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
  if (opt.workers > 0) printf("prefork: %d workers sharing region %s\n", opt.workers, region_path);
  fflush(stdout);

  int rc = 0;
  if (opt.workers > 0) {
    rc = supervise();
    close(listen_fd);
    if (!opt.region) guards_region_remove(region_path);
  } else {
    serve_until_quit();
  }
  printf("stopped after %ld successful calls\n", atomic_load(&host->served_ok));
  if (opt.workers > 0) munmap(host, sizeof(struct host));
  return rc;
}
