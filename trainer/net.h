/*
 * net.h — the TCP plumbing the ring (collective.c) and the parameter servers (ps.c)
 * share: TF_CONFIG addresses resolved, listened on and connected to, with errors
 * that name the address and the peer.
 */
#ifndef TN_NET_H
#define TN_NET_H

#include <poll.h>
#include <stddef.h>

/* Seconds on the monotonic clock. */
double nt_now(void);

/* How long a collective waiting for a peer stays awake (yielding its core to any
 * other thread) before it sleeps in the kernel. A sleeping core takes tens to
 * hundreds of microseconds to wake (an interrupt, longer still in a virtual machine),
 * and a synchronous step waits for its peers several times: sleeping at once cost
 * the ring a sixth of its 1 MiB all-reduce time here (docs/distributed.md). */
#define NT_AWAKE_S 1e-3

/* poll(2) that first polls without sleeping for up to NT_AWAKE_S (sched_yield
 * between tries), then sleeps for the rest of timeout_ms. Returns as poll does. */
int nt_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms);

/* Listens on addr ("host:port", IPv6 "[addr]:port") with SO_REUSEADDR (a restarted
 * replica gets its port back at once); the socket is non-blocking and close-on-exec.
 * `what` says whose address it is, for the error ("this replica's TF_CONFIG
 * address"). 0 and *out, or TN_EINVAL (bad address) / TN_EIO (cannot listen). */
int nt_listen(const char *addr, int backlog, const char *what, int *out, char *err,
              size_t errlen);

/* Sending and receiving whole messages. Each returns 0; TN_EPEER when the stream
 * ends first (the peer closed the connection); or TN_EIO when a call fails, with
 * errno saying why (EAGAIN: a blocking socket's SO_SNDTIMEO / SO_RCVTIMEO passed;
 * ETIMEDOUT: nt_recv_until's deadline passed; EPIPE, ECONNRESET: the peer is gone).
 * No message: the caller names the peer (nt_io_error says what happened). */

/* Sends all len bytes on a blocking socket (its SO_SNDTIMEO, if any, bounds each
 * wait). */
int nt_send_all(int fd, const void *buf, size_t len);
/* Receives exactly len bytes on a blocking socket (SO_RCVTIMEO likewise). */
int nt_recv_all(int fd, void *buf, size_t len);
/* Receives exactly len bytes before deadline (nt_now() time), whatever the socket's
 * mode. A stop request (nt_watch_stop) ends the wait: TN_EIO with errno EINTR. */
int nt_recv_until(int fd, void *buf, size_t len, double deadline);
/* What a failed nt_send_all / nt_recv_all / nt_recv_until returned, in words ("the
 * connection closed", "timed out", strerror's): code is what it returned, and for
 * TN_EIO errno is read, so call this before anything else can change errno. */
const char *nt_io_error(int code);

/* TCP_NODELAY (collectives are latency-bound at small sizes). Socket buffers are left
 * to the kernel's autotuning: fixed 4 MiB buffers measured slower on loopback. */
void nt_tune(int fd);

/* Connects to addr, retrying refused (or unanswered) connections until deadline
 * (nt_now() time); every attempt is bounded by the deadline, so a host that drops
 * packets cannot hang the caller. The socket is blocking, close-on-exec, with
 * TCP_NODELAY. On timeout: TN_EPEER "timed out after TIMEOUT s waiting for WHO at
 * ADDR (reason); hint: ...". */
int nt_connect(const char *addr, const char *who, double deadline, double timeout, int *out,
               char *err, size_t errlen);

/* The flag of a stop request (a signal handler sets it): while it is nonzero the waits
 * for peers (nt_connect's retries, a ring's accept) end at once, TN_EPEER "stopped by
 * signal N while waiting for ...". NULL (the default): they wait until their deadline. */
void nt_watch_stop(volatile const int *flag);
/* The signal of a stop request the waits have seen, or 0. */
int nt_stop_signal(void);
/* The poll timeout (ms) of a wait for peers until deadline (nt_now() time), in slices
 * of at most 0.1 s so that a stop request that came just before the poll is seen soon
 * (a signal handler's flag set between a check and the poll would not end the poll);
 * 0 when the deadline has passed. */
int nt_wait_slice(double deadline);

#endif
