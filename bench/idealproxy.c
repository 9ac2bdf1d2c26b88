/* The least a stdio server can do for one remote call, for bench/latency.py:
 * read a request line from stdin (blocking), send a fixed call packet to
 * the pool socket on a fresh connection, read the whole reply, close, and
 * write a fixed response line. No parsing, no encoding, no event loop: its
 * time over the raw floor is what the two extra hops (client -> server ->
 * client, each a pipe write and a wake-up) cost on this machine, which no
 * server between a client and a pool avoids.
 *
 *   idealproxy SOCKET REQUEST RESPONSE
 *
 * SOCKET    the pool's Unix socket
 * REQUEST   file: the call packet sent for every line
 * RESPONSE  the line written back for every call (without the newline)
 *
 * Exits 0 at end of input, 1 with a message on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "idealproxy: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
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

int main(int argc, char **argv) {
    if (argc != 4) {
        errno = 0;
        die("usage: idealproxy SOCKET REQUEST RESPONSE");
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof addr.sun_path) {
        errno = 0;
        die("socket path too long");
    }
    strcpy(addr.sun_path, argv[1]);
    static unsigned char req[1 << 16];
    FILE *f = fopen(argv[2], "rb");
    if (!f) die(argv[2]);
    size_t req_len = fread(req, 1, sizeof req, f);
    fclose(f);
    size_t resp_len = strlen(argv[3]);
    char *resp = malloc(resp_len + 1);
    if (!resp) die("out of memory");
    memcpy(resp, argv[3], resp_len);
    resp[resp_len++] = '\n';
    static char in[1 << 16];
    size_t have = 0;
    static unsigned char got[1 << 16];
    for (;;) {
        char *nl;
        while (!(nl = memchr(in, '\n', have))) {
            if (have == sizeof in) die("request line longer than 64 KiB");
            ssize_t n = read(0, in + have, sizeof in - have);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die("read");
            if (n == 0) return 0;
            have += (size_t)n;
        }
        size_t used = (size_t)(nl - in) + 1;
        memmove(in, nl + 1, have - used);
        have -= used;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) die("socket");
        if (connect(s, (const struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
        write_all(s, req, req_len);
        size_t got_len = 0, need = 32;
        while (got_len < need) {
            ssize_t n = read(s, got + got_len, sizeof got - got_len);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) die("the pool closed the connection early");
            got_len += (size_t)n;
            if (got_len >= 32 && need == 32) {
                uint32_t offset;
                uint64_t length;
                memcpy(&offset, got + 20, 4);
                memcpy(&length, got + 24, 8);
                need = 32 + offset + length;
                if (need > sizeof got) die("reply larger than 64 KiB");
            }
        }
        close(s);
        write_all(1, resp, resp_len);
    }
}
