/* The live testbed's stock tier (docs/live.md): an HTTP/1.1 server in C with a fixed pool
 * of worker threads (the topology's `servers`) taking requests from one FIFO queue (the
 * worker queue), with libguards' admission at the door and one database call per request.
 *
 *   GET /view | POST /reserve      grpc-timeout (the caller's deadline), x-priority,
 *                                  Idempotency-Key (passed on to the database)
 *   GET /stats                     the admission's counters and the calls inside
 *   GET /admin/quit                stop: every worker finishes, the door is freed
 *
 * What each answer means to the caller: 200 the database answered; 503 + Retry-After +
 * X-Refused-By: admission (the door) or db-queue (the database's age limit); 504 no time
 * left (deadline passed at dequeue, or the database call timed out).
 *
 * Connections are kept alive unless the caller asks otherwise (`Connection: close`, or
 * HTTP/1.0). One I/O thread owns every idle connection (epoll): it reads a request in
 * full, passes it through the door (admission, at arrival: a permit is held while the
 * call waits) and puts it at the back of the queue, so an idle connection never holds a
 * worker and the queue is one FIFO of requests, whichever connection they came on. A
 * worker checks the deadline when it takes a call (dequeue). The I/O thread answers GET
 * /stats itself, so the gauges can be read while every worker is busy ("inside": calls
 * with a worker; "queued": admitted calls waiting for one).
 *
 * With --cancel 1 a worker watches the caller's socket while it waits for the database:
 * a caller that gives up closes it, and the worker drops its database call at once
 * (which cancels the query there). With --cancel 0 (as shipped) it never notices.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "guards.h"

#define MS 1000000ull

static struct {
  int port, workers, db_port, cancel, deadline_check, send_deadline, db_attempts;
  uint64_t db_timeout_ms, max_run_s;
  int reserve_limit, view_limit; /* 0: no admission */
} opt = {.port = 0, .workers = 32, .db_port = 0, .cancel = 0, .deadline_check = 0,
         .send_deadline = 0, .db_attempts = 1, .db_timeout_ms = 5000, .max_run_s = 600,
         .reserve_limit = 0, .view_limit = 0};

/* One client connection. Between requests it belongs to the I/O thread (armed in epoll,
 * one-shot); from a complete request to its answer, to the worker that took it. */
struct conn {
  int fd;
  int keep;   /* the answer keeps the connection open */
  size_t got; /* bytes of the request in buf */
  char buf[4096];
  /* the request, as the door saw it */
  const char *op;
  uint32_t priority;
  uint64_t deadline;
  guards_permit admitted;
  int have_permit;
  struct conn *next;               /* the request queue */
  struct conn *all_prev, *all_next; /* every open connection, for the shutdown */
};

static guards_admission *door;
static int listen_fd = -1, epoll_fd = -1;
static atomic_int quitting;
static atomic_long inside, answered, refused_admission, refused_queue, timed_out, cancelled, db_calls, bad_requests;
static atomic_long connections, open_connections, kept_alive;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static struct conn *head_q, *tail_q, *all_conns;
static long queued;

static void die(const char *what, guards_result rc) {
  char detail[256];
  guards_last_error_detail(detail, sizeof detail);
  fprintf(stderr, "live-stock: %s: %s (%s)\n", what, guards_result_message(rc), detail);
  exit(1);
}

/* Sends all of buf on a non-blocking socket, waiting up to 1 s for room each time; 0 on
 * success. A caller that stops reading loses its connection, not a worker. */
static int send_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      if (poll(&p, 1, 1000) <= 0) return -1;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

static int respond(struct conn *c, int status, const char *reason, const char *extra, const char *body) {
  char out[1024];
  size_t blen = strlen(body);
  int n = snprintf(out, sizeof out,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                   "Connection: %s\r\n%s\r\n%s",
                   status, reason, blen, c->keep ? "keep-alive" : "close", extra ? extra : "", body);
  if (n < 0 || (size_t)n >= sizeof out || send_all(c->fd, out, (size_t)n) != 0) c->keep = 0;
  return 0;
}

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

/* Whether c->buf holds one whole request (head, and the body its Content-Length gives):
 * 1 yes, 0 not yet, -1 never (too large or malformed). Sets c->keep from the request. */
static int request_complete(struct conn *c) {
  const char *end = strstr(c->buf, "\r\n\r\n");
  if (!end) return c->got + 1 >= sizeof c->buf ? -1 : 0;
  size_t head_len = (size_t)(end - c->buf) + 4, len = 0;
  const char *v = header(c->buf, "content-length", &len);
  size_t body = 0;
  if (v) {
    char num[24];
    char *e = NULL;
    if (len == 0 || len >= sizeof num) return -1;
    memcpy(num, v, len);
    num[len] = 0;
    unsigned long long x = strtoull(num, &e, 10);
    if (*e || x > sizeof c->buf) return -1;
    body = (size_t)x;
  }
  if (c->got < head_len + body) return c->got + 1 >= sizeof c->buf ? -1 : 0;
  const char *line_end = strstr(c->buf, "\r\n");
  int http11 = line_end - c->buf >= 8 && strncmp(line_end - 8, "HTTP/1.1", 8) == 0;
  const char *conn_h = header(c->buf, "connection", &len);
  int close_asked = conn_h && len == 5 && strncasecmp(conn_h, "close", 5) == 0;
  /* A request pipelined behind this one is not served: the answer closes the connection. */
  c->keep = http11 && !close_asked && c->got == head_len + body;
  return 1;
}

/* One database call: status of the answer (200, 503, 504, ...), 0 when the attempt timed
 * out, -1 when the caller left (cancel), -2 when the database could not be reached. */
static int db_call(int client, const char *op, uint32_t priority, uint64_t budget_ns, int send_deadline,
                   const char *key, size_t key_len) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -2;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.db_port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -2;
  }
  char req[512];
  char dl[64] = "";
  if (send_deadline) {
    uint64_t m = budget_ns / MS;
    snprintf(dl, sizeof dl, "grpc-timeout: %llum\r\n", (unsigned long long)(m ? m : 1));
  }
  char ik[160] = "";
  if (key && key_len > 0 && key_len < 100) snprintf(ik, sizeof ik, "Idempotency-Key: %.*s\r\n", (int)key_len, key);
  int n = snprintf(req, sizeof req, "GET /%s HTTP/1.1\r\nHost: db\r\nx-priority: %u\r\n%s%sConnection: close\r\n\r\n",
                   op, priority, dl, ik);
  atomic_fetch_add(&db_calls, 1);
  send_all(fd, req, (size_t)n);
  uint64_t until = guards_now_ns() + budget_ns;
  char buf[1024];
  size_t got = 0;
  int watch = opt.cancel;
  for (;;) {
    uint64_t now = guards_now_ns();
    if (now >= until) {
      close(fd);
      return 0;
    }
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = client, .events = POLLIN | POLLRDHUP}};
    int waitms = (int)((until - now + MS - 1) / MS);
    int r = poll(p, watch ? 2 : 1, waitms);
    if (r < 0 && errno == EINTR) continue;
    if (watch && (p[1].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
      char c;
      ssize_t k = recv(client, &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close(fd); /* the database sees its caller leave: the query is cancelled */
        return -1;
      }
      if (k > 0) watch = 0; /* bytes of a next request, not a hang-up: stop watching */
    }
    if (p[0].revents) {
      ssize_t k = recv(fd, buf + got, sizeof buf - 1 - got, 0);
      if (k <= 0) {
        close(fd);
        buf[got] = 0;
        int status = 0;
        if (got > 12 && sscanf(buf, "HTTP/1.1 %d", &status) == 1) return status;
        return -2;
      }
      got += (size_t)k;
      buf[got] = 0;
      int status = 0;
      if (strstr(buf, "\r\n\r\n") && sscanf(buf, "HTTP/1.1 %d", &status) == 1) {
        close(fd);
        return status;
      }
      if (got >= sizeof buf - 1) {
        close(fd);
        return -2;
      }
    }
  }
}

static int stats(struct conn *c) {
  guards_admission_stats s;
  uint64_t out = 0;
  memset(&s, 0, sizeof s);
  if (door) {
    guards_admission_get_stats(door, &s);
    guards_admission_outstanding(door, &out);
  }
  pthread_mutex_lock(&lock);
  long q = queued;
  pthread_mutex_unlock(&lock);
  char body[700];
  snprintf(body, sizeof body,
           "{\"inside\": %ld, \"answered\": %ld, \"refused_admission\": %ld, \"refused_queue\": %ld, "
           "\"timed_out\": %ld, \"cancelled\": %ld, \"db_calls\": %ld, \"admission_outstanding\": %llu, "
           "\"admission_admitted\": %llu, \"admission_rejected\": %llu, \"bad_requests\": %ld, \"queued\": %ld, "
           "\"connections\": %ld, \"open_connections\": %ld, \"kept_alive\": %ld}\n",
           atomic_load(&inside), atomic_load(&answered), atomic_load(&refused_admission),
           atomic_load(&refused_queue), atomic_load(&timed_out), atomic_load(&cancelled),
           atomic_load(&db_calls), (unsigned long long)out, (unsigned long long)s.admitted,
           (unsigned long long)(s.refused_limit_reached + s.refused_overloaded), atomic_load(&bad_requests),
           q, atomic_load(&connections), atomic_load(&open_connections), atomic_load(&kept_alive));
  return respond(c, 200, "OK", "Content-Type: application/json\r\n", body);
}

static void stop(void);

/* The door, on the I/O thread when a request has arrived in full: its route, priority
 * and deadline, and admission (a call is admitted before it queues, and its permit is
 * held while it waits: the admission limits count calls queued or running). 1: queue it
 * for a worker; 0: answered here (a refusal, a bad request, an unknown path). */
static int admit(struct conn *c) {
  const char *req = c->buf;
  uint64_t now = guards_now_ns();
  c->have_permit = 0;
  if (strncmp(req, "GET /admin/quit", 15) == 0) {
    c->op = NULL;
    return 1;
  }
  if (strncmp(req, "GET /view", 9) == 0) c->op = "read";
  else if (strncmp(req, "GET /reserve", 12) == 0 || strncmp(req, "POST /reserve", 13) == 0) c->op = "write";
  else return respond(c, 404, "Not Found", NULL, "no such path\n");
  size_t len = 0;
  c->priority = 1;
  const char *p = header(req, "x-priority", &len);
  if (p && len == 1 && p[0] >= '0' && p[0] <= '7') c->priority = (uint32_t)(p[0] - '0');
  c->deadline = GUARDS_NO_DEADLINE;
  if ((p = header(req, "grpc-timeout", &len)) != NULL) {
    if (guards_deadline_from_grpc_timeout(now, p, len, &c->deadline) != GUARDS_RESULT_OK)
      return respond(c, 400, "Bad Request", NULL, "bad grpc-timeout\n");
  }
  if (door) {
    if (guards_admission_try_acquire(door, now, c->priority, &c->admitted) != GUARDS_RESULT_OK) {
      guards_rejection r;
      uint64_t secs = 1;
      if (guards_last_rejection(&r) == GUARDS_RESULT_OK && r.has_retry_at) {
        secs = guards_retry_after_secs(r.retry_at_ns, now);
        if (secs == 0) secs = 1;
      }
      char extra[128];
      snprintf(extra, sizeof extra, "Retry-After: %llu\r\nX-Refused-By: admission\r\n", (unsigned long long)secs);
      atomic_fetch_add(&refused_admission, 1);
      return respond(c, 503, "Service Unavailable", extra, "admission\n");
    }
    c->have_permit = 1;
  }
  return 1;
}

/* A worker serves an admitted call: the deadline check at dequeue, then the database. */
static int handle(struct conn *c) {
  const char *req = c->buf;
  int fd = c->fd;
  if (c->op == NULL) { /* GET /admin/quit */
    c->keep = 0;
    respond(c, 200, "OK", NULL, "bye\n");
    stop();
    return 0;
  }
  const char *op = c->op;
  uint32_t priority = c->priority;
  uint64_t deadline = c->deadline;
  size_t len = 0;
  if (opt.deadline_check && deadline != GUARDS_NO_DEADLINE && guards_now_ns() >= deadline) {
    atomic_fetch_add(&timed_out, 1);
    respond(c, 504, "Gateway Timeout", "X-Refused-By: stock-deadline\r\n", "no time left\n");
    if (c->have_permit) guards_admission_report(door, c->admitted, GUARDS_OUTCOME_TIMEOUT, guards_now_ns());
    return 0;
  }
  atomic_fetch_add(&inside, 1);
  const char *key = header(req, "idempotency-key", &len);
  size_t key_len = key ? len : 0;
  int status = -2;
  uint32_t outcome = GUARDS_OUTCOME_SUCCESS;
  for (int attempt = 0; attempt < opt.db_attempts; attempt++) {
    uint64_t t = guards_now_ns();
    uint64_t budget = opt.db_timeout_ms * MS;
    if (deadline != GUARDS_NO_DEADLINE) {
      if (t >= deadline) {
        status = 0;
        break;
      }
      if (deadline - t < budget) budget = deadline - t; /* statement timeout = time left */
    }
    status = db_call(fd, op, priority, budget, opt.send_deadline && deadline != GUARDS_NO_DEADLINE, key, key_len);
    if (status != 0) break; /* only a timeout is retried */
  }
  if (status == 200) {
    atomic_fetch_add(&answered, 1);
    respond(c, 200, "OK", NULL, "ok\n");
  } else if (status == 503) {
    outcome = GUARDS_OUTCOME_OVERLOADED;
    atomic_fetch_add(&refused_queue, 1);
    respond(c, 503, "Service Unavailable", "Retry-After: 1\r\nX-Refused-By: db-queue\r\n", "db queue\n");
  } else if (status == -1) {
    outcome = GUARDS_OUTCOME_CANCELLED;
    atomic_fetch_add(&cancelled, 1);
    c->keep = 0; /* the caller has gone */
  } else if (status == 0 || status == 504) {
    outcome = GUARDS_OUTCOME_TIMEOUT;
    atomic_fetch_add(&timed_out, 1);
    respond(c, 504, "Gateway Timeout", "X-Refused-By: db-timeout\r\n", "db timeout\n");
  } else {
    outcome = GUARDS_OUTCOME_OTHER_TRANSIENT;
    respond(c, 502, "Bad Gateway", "X-Refused-By: db-error\r\n", "db error\n");
  }
  atomic_fetch_sub(&inside, 1);
  if (c->have_permit) guards_admission_report(door, c->admitted, outcome, guards_now_ns());
  return 0;
}

static void conn_close(struct conn *c) {
  pthread_mutex_lock(&lock);
  if (c->all_prev) c->all_prev->all_next = c->all_next;
  else all_conns = c->all_next;
  if (c->all_next) c->all_next->all_prev = c->all_prev;
  pthread_mutex_unlock(&lock);
  close(c->fd);
  free(c);
  atomic_fetch_sub(&open_connections, 1);
}

/* Hands an idle connection back to the I/O thread for its next request. */
static void conn_rearm(struct conn *c) {
  c->got = 0;
  c->buf[0] = 0;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};
  if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) != 0) conn_close(c);
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (!head_q && !atomic_load(&quitting)) pthread_cond_wait(&work, &lock);
    struct conn *c = head_q;
    if (!c) {
      pthread_mutex_unlock(&lock);
      return NULL; /* quitting, nothing left to serve */
    }
    head_q = c->next;
    if (!head_q) tail_q = NULL;
    queued--;
    pthread_mutex_unlock(&lock);
    handle(c);
    if (c->keep && !atomic_load(&quitting)) {
      atomic_fetch_add(&kept_alive, 1);
      conn_rearm(c);
    } else {
      conn_close(c);
    }
  }
}

/* The I/O thread: accepts connections and reads requests from every idle one; a whole
 * request goes to the back of the workers' queue, GET /stats is answered here. */
static void *io_loop(void *arg) {
  (void)arg;
  struct epoll_event evs[64];
  while (!atomic_load(&quitting)) {
    int n = epoll_wait(epoll_fd, evs, 64, 100);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == NULL) { /* the listening socket */
        for (;;) {
          int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct conn *c = calloc(1, sizeof *c);
          if (!c) {
            close(fd);
            continue;
          }
          c->fd = fd;
          pthread_mutex_lock(&lock);
          c->all_next = all_conns;
          if (all_conns) all_conns->all_prev = c;
          all_conns = c;
          pthread_mutex_unlock(&lock);
          atomic_fetch_add(&connections, 1);
          atomic_fetch_add(&open_connections, 1);
          struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};
          if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) conn_close(c);
        }
        continue;
      }
      struct conn *c = evs[i].data.ptr;
      int gone = 0;
      for (;;) {
        ssize_t k = recv(c->fd, c->buf + c->got, sizeof c->buf - 1 - c->got, 0);
        if (k > 0) {
          c->got += (size_t)k;
          c->buf[c->got] = 0;
          if (c->got + 1 >= sizeof c->buf) break;
          continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) gone = 1;
        break;
      }
      int whole = request_complete(c);
      if (gone && whole == 1) {
        gone = 0; /* a whole request, then the caller's half-close: answer it, then close */
        c->keep = 0;
      }
      if (gone || whole < 0) {
        if (!gone) {
          atomic_fetch_add(&bad_requests, 1);
          c->keep = 0;
          respond(c, 400, "Bad Request", NULL, "bad request\n");
        }
        conn_close(c);
      } else if (whole == 0) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};
        if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) != 0) conn_close(c);
      } else if (strncmp(c->buf, "GET /stats", 10) == 0 || !admit(c)) {
        if (strncmp(c->buf, "GET /stats", 10) == 0) stats(c);
        if (c->keep && !atomic_load(&quitting)) conn_rearm(c);
        else conn_close(c);
      } else {
        pthread_mutex_lock(&lock);
        c->next = NULL;
        if (tail_q) tail_q->next = c;
        else head_q = c;
        tail_q = c;
        queued++;
        pthread_cond_signal(&work);
        pthread_mutex_unlock(&lock);
      }
    }
  }
  return NULL;
}

static void *watchdog(void *arg) {
  (void)arg;
  /* Every run stops by itself: after --max-run-s the server quits. */
  for (uint64_t i = 0; i < opt.max_run_s * 10 && !atomic_load(&quitting); i++) {
    struct timespec t = {.tv_sec = 0, .tv_nsec = 100000000};
    nanosleep(&t, NULL);
  }
  if (!atomic_load(&quitting)) fprintf(stderr, "live-stock: --max-run-s reached, stopping\n");
  stop();
  return NULL;
}

/* Stop: no new connection or request; the workers finish what they hold and leave. */
static void stop(void) {
  pthread_mutex_lock(&lock);
  atomic_store(&quitting, 1);
  pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  shutdown(listen_fd, SHUT_RDWR);
}

static long number(const char *name, const char *v) {
  char *end = NULL;
  long x = v ? strtol(v, &end, 10) : -1;
  if (!v || *end || x < 0 || x > 1000000) {
    fprintf(stderr, "live-stock: %s needs a number 0..1000000\n", name);
    exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--port") == 0) opt.port = (int)number(a, v);
    else if (strcmp(a, "--workers") == 0) opt.workers = (int)number(a, v);
    else if (strcmp(a, "--db-port") == 0) opt.db_port = (int)number(a, v);
    else if (strcmp(a, "--cancel") == 0) opt.cancel = (int)number(a, v);
    else if (strcmp(a, "--deadline-check") == 0) opt.deadline_check = (int)number(a, v);
    else if (strcmp(a, "--send-deadline") == 0) opt.send_deadline = (int)number(a, v);
    else if (strcmp(a, "--db-attempts") == 0) opt.db_attempts = (int)number(a, v);
    else if (strcmp(a, "--db-timeout-ms") == 0) opt.db_timeout_ms = (uint64_t)number(a, v);
    else if (strcmp(a, "--reserve-limit") == 0) opt.reserve_limit = (int)number(a, v);
    else if (strcmp(a, "--view-limit") == 0) opt.view_limit = (int)number(a, v);
    else if (strcmp(a, "--max-run-s") == 0) opt.max_run_s = (uint64_t)number(a, v);
    else {
      fprintf(stderr, "usage: live-stock --db-port N [--port N] [--workers N] [--cancel 0|1] "
                      "[--deadline-check 0|1] [--send-deadline 0|1] [--db-attempts N] [--db-timeout-ms N] "
                      "[--reserve-limit N --view-limit N] [--max-run-s N]\n");
      return 2;
    }
  }
  if (opt.workers < 1 || opt.workers > 1024 || opt.db_port == 0 || opt.db_attempts < 1) {
    fprintf(stderr, "live-stock: need --db-port, 1..1024 workers, at least 1 db attempt\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  guards_result rc;
  if (opt.reserve_limit > 0) {
    guards_admission_config ac;
    guards_admission_config_default(&ac);
    ac.limits[0] = (uint64_t)opt.reserve_limit;
    for (int i = 1; i < 8; i++) ac.limits[i] = (uint64_t)opt.view_limit;
    if ((rc = guards_admission_new(&ac, &door)) != GUARDS_RESULT_OK) die("admission", rc);
  }
  listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 4096) != 0) {
    perror("live-stock: bind/listen");
    return 1;
  }
  socklen_t alen = sizeof a;
  getsockname(listen_fd, (struct sockaddr *)&a, &alen);
  fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &lev) != 0) {
    perror("live-stock: epoll");
    return 1;
  }
  printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
  fflush(stdout);
  pthread_t *t = calloc((size_t)opt.workers, sizeof *t);
  pthread_t wd, io;
  pthread_create(&wd, NULL, watchdog, NULL);
  pthread_create(&io, NULL, io_loop, NULL);
  for (int i = 0; i < opt.workers; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < opt.workers; i++) pthread_join(t[i], NULL);
  stop();
  pthread_join(io, NULL);
  pthread_join(wd, NULL);
  free(t);
  while (all_conns) conn_close(all_conns); /* idle keep-alive connections */
  close(epoll_fd);
  uint64_t out = 0;
  if (door) guards_admission_outstanding(door, &out);
  fprintf(stderr, "live-stock: stopped; inside %ld, admission outstanding %llu\n", atomic_load(&inside),
          (unsigned long long)out);
  int clean = atomic_load(&inside) == 0 && out == 0;
  guards_admission_free(door);
  close(listen_fd);
  return clean ? 0 : 3;
}
