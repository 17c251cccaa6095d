/*
 * net.c — TCP plumbing shared by the ring and the parameter servers (see net.h).
 */
#include "trainer/net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "common/tfconfig.h"

static volatile const int *stop_flag; /* nt_watch_stop's */

#define NT_STOP_SLICE_MS 100 /* the longest a wait for peers goes without seeing a stop */

void nt_watch_stop(volatile const int *flag) { stop_flag = flag; }

int nt_stop_signal(void) { return stop_flag ? *stop_flag : 0; }

double nt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The loop of nt_send_all (send: 1) and nt_recv_all (send: 0) on a blocking socket. */
static int transfer(int fd, char *p, size_t len, int send_) {
    while (len > 0) {
        ssize_t k = send_ ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (k == 0 && !send_) return TN_EPEER;
        if (k < 0) {
            if (errno == EINTR) continue;
            return TN_EIO;
        }
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

int nt_send_all(int fd, const void *buf, size_t len) {
    return transfer(fd, (char *)buf, len, 1); /* send(2) only reads it */
}

int nt_recv_all(int fd, void *buf, size_t len) { return transfer(fd, buf, len, 0); }

int nt_wait_slice(double deadline) {
    double left = deadline - nt_now();
    if (left <= 0) return 0;
    return left * 1000 > NT_STOP_SLICE_MS ? NT_STOP_SLICE_MS : (int)(left * 1000) + 1;
}

int nt_recv_until(int fd, void *buf, size_t len, double deadline) {
    char *p = buf;
    while (len > 0) {
        if (nt_stop_signal()) {
            errno = EINTR;
            return TN_EIO;
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ms = nt_wait_slice(deadline);
        if (ms == 0) {
            errno = ETIMEDOUT;
            return TN_EIO;
        }
        int rc = poll(&pf, 1, ms);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) return TN_EIO;
        if (rc == 0) continue; /* a slice: the stop flag and the deadline again */
        ssize_t k = recv(fd, p, len, MSG_DONTWAIT);
        if (k == 0) return TN_EPEER;
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
            return TN_EIO;
        }
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

const char *nt_io_error(int code) {
    if (code == TN_EPEER) return "the connection closed";
    int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT) return "timed out";
    return strerror(e);
}

int nt_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms) {
    int k = poll(fds, nfds, 0);
    if (k != 0 || timeout_ms == 0) return k;
    double start = nt_now(), awake = NT_AWAKE_S;
    if (timeout_ms > 0 && awake > timeout_ms * 1e-3) awake = timeout_ms * 1e-3;
    while (k == 0 && nt_now() - start < awake) {
        sched_yield();
        k = poll(fds, nfds, 0);
    }
    if (k != 0) return k;
    int left = timeout_ms < 0 ? -1 : timeout_ms - (int)((nt_now() - start) * 1000);
    return poll(fds, nfds, left < 0 && timeout_ms >= 0 ? 0 : left);
}

static int resolve(const char *addr, struct addrinfo **out, char *err, size_t errlen) {
    char host[256], port[16];
    int p;
    if (tf_split_address(addr, host, sizeof host, &p, err, errlen)) return TN_EINVAL;
    snprintf(port, sizeof port, "%d", p);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(host, port, &hints, out);
    if (rc)
        return tn_error(err, errlen, TN_EINVAL, "cannot resolve %s: %s", addr, gai_strerror(rc));
    return 0;
}

int nt_listen(const char *addr, int backlog, const char *what, int *out, char *err,
              size_t errlen) {
    struct addrinfo *ai = NULL;
    int rc = resolve(addr, &ai, err, errlen);
    if (rc) return rc;
    int fd = -1, saved = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, backlog) == 0) break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return tn_error(err, errlen, TN_EIO,
                        "cannot listen on %s (%s): %s; hint: is another program using the "
                        "port?",
                        addr, what, strerror(saved));
    *out = fd;
    return 0;
}

void nt_tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A connect to a local port nobody listens on can pick that very port as its own
 * source port and connect to itself (TCP simultaneous open): the replica would then
 * talk to itself while its real peer waits in vain. Such a socket counts as refused. */
static int connected_to_itself(int fd) {
    struct sockaddr_storage a, b;
    socklen_t la = sizeof a, lb = sizeof b;
    if (getsockname(fd, (struct sockaddr *)&a, &la) || getpeername(fd, (struct sockaddr *)&b, &lb))
        return 0;
    return la == lb && memcmp(&a, &b, la) == 0;
}

int nt_connect(const char *addr, const char *who, double deadline, double timeout, int *out,
               char *err, size_t errlen) {
    struct addrinfo *ai = NULL;
    int rc = resolve(addr, &ai, err, errlen);
    if (rc) return rc;
    int last = ECONNREFUSED;
    for (;;) {
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
            int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0) {
                last = errno;
                continue;
            }
            int e = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
            while (e == EINPROGRESS) { /* a host that drops packets: until the deadline */
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int ms = nt_wait_slice(deadline);
                int k = poll(&p, 1, ms > 0 ? ms : 1);
                if (k > 0) {
                    socklen_t len = sizeof e;
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
                } else if ((k == 0 && ms <= 1) || nt_stop_signal()) {
                    e = ETIMEDOUT;
                }
            }
            if (e == 0 && connected_to_itself(fd)) e = ECONNREFUSED;
            if (e == 0) {
                freeaddrinfo(ai);
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
                nt_tune(fd);
                *out = fd;
                return 0;
            }
            last = e;
            close(fd);
        }
        if (nt_stop_signal()) {
            freeaddrinfo(ai);
            return tn_error(err, errlen, TN_EPEER, "stopped by signal %d while waiting for %s at %s",
                            nt_stop_signal(), who, addr);
        }
        if (nt_now() >= deadline) break;
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL); /* a signal ends it early */
    }
    freeaddrinfo(ai);
    return tn_error(err, errlen, TN_EPEER,
                    "timed out after %g s waiting for %s at %s (%s); hint: every replica "
                    "of TF_CONFIG's cluster must be started (raise --peer_timeout if they "
                    "start slowly)",
                    timeout, who, addr, strerror(last));
}
