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
#include <unistd.h>

#include "common/tfconfig.h"

/* The loopback address at port. */
static inline struct sockaddr_in loopback_addr(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    return a;
}

/* A port for a test's server to listen on, as the local executor picks its replicas'
 * (common/tfconfig.h, tf_pick_local_ports: random below the kernel's range of
 * ephemeral ports, so that no outgoing connection can take it as its own before the
 * server binds it), never the same twice in a process. */
static inline int free_port(void) {
    enum { KEEP = 512 };
    static int given[KEEP], ngiven;
    for (;;) {
        int port = 0, seen = 0;
        if (tf_pick_local_ports(1, &port, NULL, 0) != 0) return 0;
        for (int i = 0; i < ngiven && i < KEEP; i++) seen |= given[i] == port;
        if (seen) continue;
        given[ngiven++ % KEEP] = port;
        return port;
    }
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
