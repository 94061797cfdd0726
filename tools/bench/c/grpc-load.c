/*
 * grpc-load: a small closed-loop gRPC (h2c) load generator in C on libnghttp2.
 *
 * Why it exists: h2load sends the same request body on every request, so it cannot address
 * many distinct objects through one gRPC method (the object id is in the protobuf body, not
 * the path). grpc-load reads a file of ready-made gRPC frames (5-byte length prefix +
 * protobuf message each, encoded by the TypeScript harness with the repo's generated code)
 * and sends frame i mod N as the body of request i, so consecutive requests address
 * different objects. It also checks what h2load cannot: every response's `grpc-status`
 * (trailers, or headers of a trailers-only answer) must be 0 to count as a success.
 *
 * Phases: warm-up (not counted in the window), a measured window, then a drain: no new
 * request is sent and every request in flight is awaited, so `ok_total` is the exact
 * number of calls the server acknowledged with status 0 (the harness compares it with the
 * server's own state afterwards).
 *
 * Output: the lines `window-start` and `window-end` when the measured window opens and
 * closes (the harness reads the server's CPU time then), and one JSON object at the end,
 * all on stdout. Exit status 0 unless it could not run at all.
 *
 * Build: gcc -O2 -o grpc-load grpc-load.c -lnghttp2 -lm  (Debian: libnghttp2-dev)
 * Usage: grpc-load --port P --path /pkg.Service/Method --bodies FILE
 *                  [--host 127.0.0.1] [--connections 1] [--inflight 64]
 *                  [--warmup-ms 500] [--duration-ms 3000] [--drain-ms 10000]
 *                  [--max-requests N]
 *
 * `--max-requests N` stops sending after N requests (then drains and exits): the harness
 * uses it to write every distinct object once before anything is measured.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  const uint8_t *data;
  size_t len;
} body_t;

typedef struct req {
  double start_us;
  const body_t *body;
  size_t off;
  int http_status;
  int grpc_status; /* -1: not seen */
  char grpc_message[160];
} req_t;

typedef struct {
  int fd;
  nghttp2_session *session;
  int inflight;
  int target;
  int dead;
} conn_t;

/* ------------------------------------------------------------------ options and state */

static const char *opt_host = "127.0.0.1";
static int opt_port = 0;
static const char *opt_path = NULL;
static const char *opt_bodies = NULL;
static int opt_connections = 1;
static int opt_inflight = 64;
static long opt_warmup_ms = 500;
static long opt_duration_ms = 3000;
static long opt_drain_ms = 10000;
static unsigned long long opt_max_requests = 0; /* 0: no limit */

static char authority[300];
static body_t *bodies = NULL;
static size_t body_count = 0;
static size_t next_body = 0;

static double t_start_us, t_window_us, t_end_us;
static int sending = 1;

static uint64_t ok_total = 0, err_total = 0, grpc_err = 0, http_err = 0, stream_err = 0;
static uint64_t sent_total = 0;
static uint64_t window_ok = 0, window_err = 0;
static uint32_t *lat = NULL;
static size_t lat_len = 0, lat_cap = 0;
static char first_error[256] = "";

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *msg) {
  fprintf(stderr, "grpc-load: %s\n", msg);
  exit(2);
}

__attribute__((format(printf, 1, 2)))
static void note_error(const char *fmt, ...) {
  if (first_error[0] != '\0') return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(first_error, sizeof first_error, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------------------ body file */

static void load_bodies(const char *file) {
  int fd = open(file, O_RDONLY);
  if (fd < 0) die("cannot open the bodies file");
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 5) die("bodies file is empty or unreadable");
  uint8_t *buf = malloc((size_t)st.st_size);
  if (buf == NULL) die("out of memory");
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n <= 0) die("short read of the bodies file");
    got += (size_t)n;
  }
  close(fd);
  size_t cap = 1024;
  bodies = malloc(cap * sizeof *bodies);
  for (size_t off = 0; off < got;) {
    if (got - off < 5) die("bodies file: truncated gRPC frame prefix");
    if (buf[off] != 0) die("bodies file: compressed flag set (unsupported)");
    uint32_t n = ((uint32_t)buf[off + 1] << 24) | ((uint32_t)buf[off + 2] << 16) |
                 ((uint32_t)buf[off + 3] << 8) | (uint32_t)buf[off + 4];
    if (got - off - 5 < n) die("bodies file: truncated gRPC frame");
    if (body_count == cap) {
      cap *= 2;
      bodies = realloc(bodies, cap * sizeof *bodies);
      if (bodies == NULL) die("out of memory");
    }
    bodies[body_count].data = buf + off;
    bodies[body_count].len = 5 + (size_t)n;
    body_count++;
    off += 5 + (size_t)n;
  }
}

/* ------------------------------------------------------------------ nghttp2 callbacks */

static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len, int flags,
                       void *user) {
  (void)s;
  (void)flags;
  conn_t *c = user;
  ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return NGHTTP2_ERR_WOULDBLOCK;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return n;
}

static ssize_t body_read_cb(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *flags, nghttp2_data_source *src, void *user) {
  (void)s;
  (void)stream_id;
  (void)user;
  req_t *r = src->ptr;
  size_t left = r->body->len - r->off;
  size_t n = left < length ? left : length;
  memcpy(buf, r->body->data + r->off, n);
  r->off += n;
  if (r->off == r->body->len) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

static int header_cb(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user) {
  (void)flags;
  (void)user;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  req_t *r = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (r == NULL) return 0;
  if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
    r->http_status = atoi((const char *)value);
  } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
    char tmp[16];
    size_t n = valuelen < sizeof tmp - 1 ? valuelen : sizeof tmp - 1;
    memcpy(tmp, value, n);
    tmp[n] = '\0';
    r->grpc_status = atoi(tmp);
  } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
    size_t n = valuelen < sizeof r->grpc_message - 1 ? valuelen : sizeof r->grpc_message - 1;
    memcpy(r->grpc_message, value, n);
    r->grpc_message[n] = '\0';
  }
  return 0;
}

static int data_chunk_cb(nghttp2_session *s, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user) {
  (void)s;
  (void)flags;
  (void)stream_id;
  (void)data;
  (void)len;
  (void)user;
  return 0; /* the response message itself is not needed: grpc-status decides */
}

static void push_latency(double us) {
  if (lat_len == lat_cap) {
    lat_cap = lat_cap ? lat_cap * 2 : 1 << 16;
    lat = realloc(lat, lat_cap * sizeof *lat);
    if (lat == NULL) die("out of memory");
  }
  lat[lat_len++] = us > 4e9 ? 4000000000u : (uint32_t)us;
}

static int stream_close_cb(nghttp2_session *s, int32_t stream_id, uint32_t error_code,
                           void *user) {
  conn_t *c = user;
  req_t *r = nghttp2_session_get_stream_user_data(s, stream_id);
  if (r == NULL) return 0;
  double t = now_us();
  int ok = 0;
  if (error_code != 0) {
    stream_err++;
    note_error("stream reset, HTTP/2 error code %u", error_code);
  } else if (r->http_status != 200) {
    http_err++;
    note_error("HTTP status %d", r->http_status);
  } else if (r->grpc_status != 0) {
    grpc_err++;
    note_error("grpc-status %d: %s", r->grpc_status, r->grpc_message);
  } else {
    ok = 1;
  }
  if (ok) ok_total++;
  else err_total++;
  if (t >= t_window_us && t < t_end_us) {
    if (ok) {
      window_ok++;
      push_latency(t - r->start_us);
    } else {
      window_err++;
    }
  }
  c->inflight--;
  free(r);
  return 0;
}

/* ------------------------------------------------------------------------ requests */

static int submit_one(conn_t *c) {
  req_t *r = calloc(1, sizeof *r);
  if (r == NULL) die("out of memory");
  r->body = &bodies[next_body];
  next_body = (next_body + 1) % body_count;
  r->grpc_status = -1;
  r->start_us = now_us();
#define NV(n, v)                                                                            \
  {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v),                                \
   NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE}
  nghttp2_nv hdrs[] = {
      NV(":method", "POST"),
      NV(":scheme", "http"),
      NV(":authority", authority),
      NV(":path", opt_path),
      NV("content-type", "application/grpc"),
      NV("te", "trailers"),
      NV("user-agent", "grpc-load/1 (odgm-ts tools/bench)"),
  };
#undef NV
  nghttp2_data_provider prd;
  prd.source.ptr = r;
  prd.read_callback = body_read_cb;
  int32_t id = nghttp2_submit_request(c->session, NULL, hdrs, sizeof hdrs / sizeof hdrs[0], &prd, r);
  if (id < 0) {
    free(r);
    note_error("submit failed: %s", nghttp2_strerror(id));
    return -1;
  }
  c->inflight++;
  sent_total++;
  return 0;
}

static void top_up(conn_t *c) {
  if (!sending || c->dead) return;
  while (c->inflight < c->target) {
    if (opt_max_requests > 0 && sent_total >= opt_max_requests) {
      sending = 0;
      break;
    }
    if (submit_one(c) != 0) break;
  }
}

static int connect_one(conn_t *c) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)opt_port);
  if (inet_pton(AF_INET, opt_host, &a.sin_addr) != 1) die("--host must be an IPv4 address");
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
  c->fd = fd;

  nghttp2_session_callbacks *cb;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_send_callback(cb, send_cb);
  nghttp2_session_callbacks_set_on_header_callback(cb, header_cb);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, data_chunk_cb);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, stream_close_cb);
  if (nghttp2_session_client_new(&c->session, cb, c) != 0) die("nghttp2_session_client_new");
  nghttp2_session_callbacks_del(cb);
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
  };
  nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, 2);
  nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 1 << 24);
  return 0;
}

static void kill_conn(conn_t *c, const char *why) {
  if (c->dead) return;
  note_error("connection lost: %s", why);
  c->dead = 1;
  /* requests in flight on it are neither ok nor counted: report them as incomplete */
}

/* -------------------------------------------------------------------------- output */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank, as tools/bench/src/stats.ts percentileSorted(). */
static double pct(double p) {
  if (lat_len == 0) return -1;
  size_t rank = (size_t)ceil((p / 100.0) * (double)lat_len);
  if (rank < 1) rank = 1;
  if (rank > lat_len) rank = lat_len;
  return lat[rank - 1];
}

static void print_json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') printf("\\%c", ch);
    else if (ch < 0x20) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

static int parse_args(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) return -1;
    if (strcmp(a, "--host") == 0) opt_host = v;
    else if (strcmp(a, "--port") == 0) opt_port = atoi(v);
    else if (strcmp(a, "--path") == 0) opt_path = v;
    else if (strcmp(a, "--bodies") == 0) opt_bodies = v;
    else if (strcmp(a, "--connections") == 0) opt_connections = atoi(v);
    else if (strcmp(a, "--inflight") == 0) opt_inflight = atoi(v);
    else if (strcmp(a, "--warmup-ms") == 0) opt_warmup_ms = atol(v);
    else if (strcmp(a, "--duration-ms") == 0) opt_duration_ms = atol(v);
    else if (strcmp(a, "--drain-ms") == 0) opt_drain_ms = atol(v);
    else if (strcmp(a, "--max-requests") == 0) opt_max_requests = strtoull(v, NULL, 10);
    else return -1;
    i++;
  }
  if (opt_port <= 0 || opt_path == NULL || opt_bodies == NULL) return -1;
  if (opt_connections < 1 || opt_inflight < opt_connections) return -1;
  if (opt_warmup_ms < 0 || opt_duration_ms <= 0 || opt_drain_ms <= 0) return -1;
  return 0;
}

int main(int argc, char **argv) {
  if (parse_args(argc, argv) != 0) {
    fprintf(stderr,
            "usage: grpc-load --port P --path /pkg.Service/Method --bodies FILE [--host 127.0.0.1]\n"
            "                 [--connections 1] [--inflight 64] [--warmup-ms 500]\n"
            "                 [--duration-ms 3000] [--drain-ms 10000] [--max-requests N]\n");
    return 2;
  }
  snprintf(authority, sizeof authority, "%s:%d", opt_host, opt_port);
  load_bodies(opt_bodies);

  conn_t *conns = calloc((size_t)opt_connections, sizeof *conns);
  for (int i = 0; i < opt_connections; i++) {
    if (connect_one(&conns[i]) != 0) die("cannot connect");
    conns[i].target = opt_inflight / opt_connections + (i < opt_inflight % opt_connections);
  }
  struct pollfd *pfd = calloc((size_t)opt_connections, sizeof *pfd);

  t_start_us = now_us();
  t_window_us = t_start_us + (double)opt_warmup_ms * 1e3;
  t_end_us = t_window_us + (double)opt_duration_ms * 1e3;
  double t_give_up = t_end_us + (double)opt_drain_ms * 1e3;
  static uint8_t buf[1 << 16];

  for (int i = 0; i < opt_connections; i++) {
    top_up(&conns[i]);
    if (nghttp2_session_send(conns[i].session) != 0) kill_conn(&conns[i], "send failed");
  }

  int window_started = 0, window_ended = 0;
  for (;;) {
    double t = now_us();
    /* Markers for the harness, which reads the server's CPU time when it sees them. */
    if (!window_started && t >= t_window_us) {
      window_started = 1;
      fputs("window-start\n", stdout);
      fflush(stdout);
    }
    if (!window_ended && t >= t_end_us) {
      window_ended = 1;
      fputs("window-end\n", stdout);
      fflush(stdout);
    }
    if (sending && t >= t_end_us) sending = 0;
    int live = 0, busy = 0;
    for (int i = 0; i < opt_connections; i++) {
      conn_t *c = &conns[i];
      if (c->dead) {
        pfd[i].fd = -1;
        continue;
      }
      live++;
      if (c->inflight > 0) busy++;
      pfd[i].fd = c->fd;
      pfd[i].events = POLLIN | (nghttp2_session_want_write(c->session) ? POLLOUT : 0);
      pfd[i].revents = 0;
    }
    if (!sending && busy == 0) break;
    if (live == 0) break;
    if (t >= t_give_up) break;
    double until = !window_started ? t_window_us : sending ? t_end_us : t_give_up;
    int timeout_ms = (int)((until - t) / 1e3) + 1;
    if (timeout_ms > 100) timeout_ms = 100;
    int n = poll(pfd, (nfds_t)opt_connections, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("poll failed");
    }
    for (int i = 0; i < opt_connections; i++) {
      conn_t *c = &conns[i];
      if (c->dead || pfd[i].fd < 0) continue;
      if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        for (;;) {
          ssize_t r = recv(c->fd, buf, sizeof buf, 0);
          if (r > 0) {
            ssize_t m = nghttp2_session_mem_recv(c->session, buf, (size_t)r);
            if (m < 0) {
              kill_conn(c, nghttp2_strerror((int)m));
              break;
            }
            if ((size_t)r < sizeof buf) break;
          } else if (r == 0) {
            kill_conn(c, "closed by the server");
            break;
          } else {
            if (errno != EAGAIN && errno != EWOULDBLOCK) kill_conn(c, strerror(errno));
            break;
          }
        }
      }
      if (c->dead) continue;
      if (sending && now_us() >= t_end_us) sending = 0;
      top_up(c);
      if (nghttp2_session_send(c->session) != 0) kill_conn(c, "send failed");
      if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session))
        kill_conn(c, "session ended (GOAWAY)");
    }
  }

  uint64_t incomplete = 0;
  for (int i = 0; i < opt_connections; i++) incomplete += (uint64_t)(conns[i].inflight > 0 ? conns[i].inflight : 0);
  qsort(lat, lat_len, sizeof *lat, cmp_u32);
  double window_s = (double)opt_duration_ms / 1e3;
  printf("{\"bodies\":%zu,\"connections\":%d,\"inflight\":%d,\"warmup_ms\":%ld,\"duration_ms\":%ld,",
         body_count, opt_connections, opt_inflight, opt_warmup_ms, opt_duration_ms);
  printf("\"sent_total\":%llu,\"ok_total\":%llu,\"err_total\":%llu,\"grpc_err\":%llu,"
         "\"http_err\":%llu,\"stream_err\":%llu,\"incomplete\":%llu,",
         (unsigned long long)sent_total, (unsigned long long)ok_total,
         (unsigned long long)err_total, (unsigned long long)grpc_err,
         (unsigned long long)http_err, (unsigned long long)stream_err,
         (unsigned long long)incomplete);
  printf("\"window_ok\":%llu,\"window_err\":%llu,\"rps\":%.1f,\"p50_us\":%.0f,\"p90_us\":%.0f,"
         "\"p99_us\":%.0f,\"max_us\":%.0f,\"first_error\":",
         (unsigned long long)window_ok, (unsigned long long)window_err,
         (double)window_ok / window_s, pct(50), pct(90), pct(99), pct(100));
  print_json_string(first_error);
  printf("}\n");
  return 0;
}
