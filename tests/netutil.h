/*
 * netutil.h — what the tests of networked code share (header only): a free loopback
 * port for a replica to listen on, and loopback sockets made by hand.
 */
#ifndef TN_NETUTIL_H
#define TN_NETUTIL_H

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The loopback address at port. */
static inline struct sockaddr_in loopback_addr(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    return a;
}

/* Whether port can be bound on loopback right now (it is bound and released). */
static inline int port_bindable(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback_addr(port);
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* The lowest port of the kernel's range for outgoing connections' own ports. */
static inline int ephemeral_low(void) {
    int lo = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d", &lo) != 1) lo = 0;
        fclose(f);
    }
    return lo > 0 ? lo : 32768;
}

/* A port for a test's server to listen on: random in [10000, the kernel's range of
 * ephemeral ports), so that no outgoing connection (another test's, or one of this
 * test's replicas connecting to a peer) can take it as its own before the server binds
 * it, as one could a port the kernel chose; nobody's right now (bound and released);
 * never the same twice in a process. Where that range leaves no room, the kernel's
 * choice (bound to 0 and released). */
static inline int free_port(void) {
    enum { LOWEST = 10000, KEEP = 512 };
    static int given[KEEP], ngiven;
    static unsigned state;
    if (!state) state = (unsigned)getpid() * 2654435761u + (unsigned)time(NULL);
    int lo = ephemeral_low();
    for (int attempt = 0; lo - LOWEST >= 1000 && attempt < 1000; attempt++) {
        state = state * 1103515245u + 12345u;
        int port = LOWEST + (int)((state >> 8) % (unsigned)(lo - LOWEST)), seen = 0;
        for (int i = 0; i < ngiven && i < KEEP; i++) seen |= given[i] == port;
        if (seen || !port_bindable(port)) continue;
        given[ngiven++ % KEEP] = port;
        return port;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback_addr(0);
    socklen_t len = sizeof a;
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* Binds the port of addr ("host:port") on loopback without listening, so that no other
 * process can listen there while the test runs: a connection to it is refused, as to a
 * replica that never started. The socket, or -1. */
static inline int hold_port(const char *addr) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback_addr(atoi(strrchr(addr, ':') + 1));
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A socket listening on a free loopback port that never accepts (the kernel completes
 * connections, nobody answers): its fd, or -1; its address "127.0.0.1:PORT" into
 * addr. */
static inline int listen_silent(char *addr, size_t len) {
    int port = free_port();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback_addr(port);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0)) {
        close(fd);
        fd = -1;
    }
    snprintf(addr, len, "127.0.0.1:%d", port);
    return fd;
}

#endif
