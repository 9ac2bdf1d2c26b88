/* A compiled client for bench/latency.py: times sequential tool calls
 * through an MCP server's stdio and the same call sent straight to the
 * server's pool socket (the raw floor), in alternating blocks, so that the
 * server's own share of a call is the difference of two figures measured
 * by the same cheap client.
 *
 *   callfloor IN_FD OUT_FD SOCKET REQUEST REPLY LINE EXPECT RUNS BLOCKS
 *
 * IN_FD, OUT_FD  the server's stdin (write end) and stdout (read end), already
 *                initialized by the caller
 * SOCKET         the pool's Unix socket
 * REQUEST REPLY  files: the call packet, and the exact reply packet expected
 * LINE           one JSON-RPC request line (without the newline)
 * EXPECT         a substring every response line must contain
 * RUNS BLOCKS    RUNS calls of each kind, in BLOCKS alternating blocks
 *
 * Prints one line: `server <ns>... raw <ns>...`, every sample in
 * nanoseconds, for the caller to summarise. Exits 1 with a message on any
 * wrong reply.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "callfloor: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) die(path);
    static unsigned char buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char *copy = malloc(*len);
    if (!copy) die("out of memory");
    memcpy(copy, buf, *len);
    return copy;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("write");
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Responses are read through a buffer kept across calls; each call reads
 * until one whole line is there. */
static char line_buf[1 << 16];
static size_t line_have;

static void server_call(int in_fd, int out_fd, const char *line, size_t line_len,
                        const char *expect) {
    write_all(in_fd, line, line_len);
    for (;;) {
        char *nl = memchr(line_buf, '\n', line_have);
        if (nl) {
            *nl = '\0';
            if (!strstr(line_buf, expect)) {
                fprintf(stderr, "callfloor: unexpected response: %.300s\n", line_buf);
                exit(1);
            }
            size_t used = (size_t)(nl - line_buf) + 1;
            memmove(line_buf, nl + 1, line_have - used);
            line_have -= used;
            return;
        }
        if (line_have == sizeof line_buf) die("response line longer than 64 KiB");
        ssize_t n = read(out_fd, line_buf + line_have, sizeof line_buf - line_have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("the server closed its stdout");
        line_have += (size_t)n;
    }
}

static void raw_call(const struct sockaddr_un *addr, const unsigned char *req, size_t req_len,
                     const unsigned char *want, size_t want_len) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) die("socket");
    if (connect(s, (const struct sockaddr *)addr, sizeof *addr) < 0) die("connect");
    write_all(s, req, req_len);
    static unsigned char got[1 << 16];
    size_t have = 0;
    size_t need = 32;
    while (have < need) {
        ssize_t n = read(s, got + have, sizeof got - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("the pool closed the connection early");
        have += (size_t)n;
        if (have >= 32 && need == 32) {
            /* header: offset (u32 at byte 20) and length (u64 at 24) of
             * what follows the 32-byte header */
            uint32_t offset;
            uint64_t length;
            memcpy(&offset, got + 20, 4);
            memcpy(&length, got + 24, 8);
            need = 32 + offset + length;
            if (need > sizeof got) die("reply larger than 64 KiB");
        }
    }
    close(s);
    if (have != want_len || memcmp(got, want, want_len) != 0) {
        errno = 0;
        die("the pool's reply differs from the expected packet");
    }
}

int main(int argc, char **argv) {
    if (argc != 10) {
        errno = 0;
        die("usage: callfloor IN_FD OUT_FD SOCKET REQUEST REPLY LINE EXPECT RUNS BLOCKS");
    }
    int in_fd = atoi(argv[1]), out_fd = atoi(argv[2]);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[3]) >= sizeof addr.sun_path) {
        errno = 0;
        die("socket path too long");
    }
    strcpy(addr.sun_path, argv[3]);
    size_t req_len, want_len;
    unsigned char *req = slurp(argv[4], &req_len);
    unsigned char *want = slurp(argv[5], &want_len);
    size_t line_len = strlen(argv[6]);
    char *line = malloc(line_len + 1);
    if (!line) die("out of memory");
    memcpy(line, argv[6], line_len);
    line[line_len++] = '\n';
    const char *expect = argv[7];
    long runs = atol(argv[8]), blocks = atol(argv[9]);
    if (runs <= 0 || blocks <= 0 || blocks > runs) {
        errno = 0;
        die("RUNS and BLOCKS must be positive, BLOCKS at most RUNS");
    }
    uint64_t *server = calloc((size_t)runs, sizeof *server);
    uint64_t *raw = calloc((size_t)runs, sizeof *raw);
    if (!server || !raw) die("out of memory");
    long per = runs / blocks, done_s = 0, done_r = 0;
    for (long b = 0; b < blocks; b++) {
        long n = b == blocks - 1 ? runs - done_s : per;
        for (long k = 0; k < n; k++) {
            uint64_t t = now_ns();
            server_call(in_fd, out_fd, line, line_len, expect);
            server[done_s++] = now_ns() - t;
        }
        for (long k = 0; k < n; k++) {
            uint64_t t = now_ns();
            raw_call(&addr, req, req_len, want, want_len);
            raw[done_r++] = now_ns() - t;
        }
    }
    printf("server");
    for (long k = 0; k < runs; k++) printf(" %llu", (unsigned long long)server[k]);
    printf("\nraw");
    for (long k = 0; k < runs; k++) printf(" %llu", (unsigned long long)raw[k]);
    printf("\n");
    return 0;
}
