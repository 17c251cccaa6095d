/*
 * bench_allreduce.c — all-reduce bandwidth on loopback (the TCP ring) or in shared
 * memory, against the machine's memory-copy bandwidth.
 *
 *   bench_allreduce [--ranks=2] [--sizes_mb=1,4,16,64] [--repeats=10] [--bf16]
 *                   [--transport=tcp|shm]
 *
 * Forks --ranks processes that open a ring on loopback ports and time cl_allreduce on
 * float32 buffers of each size (median of --repeats calls after 3 warm-ups, each call
 * timed by the slowest rank, the way NCCL's tests do). Reports algorithm bandwidth
 * (bytes / time) and bus bandwidth (algbw x 2(n-1)/n: what each link carries), and,
 * for scale, memcpy bandwidth of one core on a buffer of the same size. One JSON
 * object per line on stdout, a table on stderr. Used by bench/distributed.py.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/flags.h"
#include "trainer/collective.h"
#include "trainer/net.h"

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double memcpy_gbps(size_t bytes, int repeats) {
    char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 1e30;
    for (int i = 0; i < repeats; i++) {
        double t = nt_now();
        memcpy(b, a, bytes);
        t = nt_now() - t;
        if (t < best) best = t;
        a[i % bytes] = b[(i * 7) % bytes]; /* keep the copies alive */
    }
    free(a);
    free(b);
    return (double)bytes / best / 1e9;
}

/* One rank: times every size; rank 0 writes the slowest-rank medians to `out`. */
static int rank_main(int rank, int n, const cl_peer *peers, const int *sizes, int nsizes,
                     int repeats, int precision, int transport, int out_fd) {
    char err[512];
    cl_ring *r = NULL;
    if (cl_open(peers, n, rank, 30, 1, transport, &r, err, sizeof err)) {
        fprintf(stderr, "rank %d: %s\n", rank, err);
        return 1;
    }
    for (int s = 0; s < nsizes; s++) {
        size_t count = (size_t)sizes[s] * (1u << 20) / sizeof(float);
        float *buf = malloc(count * sizeof(float));
        for (size_t i = 0; i < count; i++) buf[i] = (float)(i % 13);
        double *times = malloc((size_t)repeats * sizeof(double));
        for (int i = -3; i < repeats; i++) {
            double t[1] = {0};
            if (cl_allreduce_f64(r, t, 1, err, sizeof err)) goto fail; /* line up */
            t[0] = nt_now();
            if (cl_allreduce(r, buf, count, precision, err, sizeof err)) goto fail;
            t[0] = nt_now() - t[0];
            /* the slowest rank's time: max via the sum of one-hot slots is overkill;
             * every rank contributes its time and rank 0 keeps the largest */
            double all[64] = {0};
            all[rank] = t[0];
            if (cl_allreduce_f64(r, all, (size_t)n, err, sizeof err)) goto fail;
            double worst = 0;
            for (int k = 0; k < n; k++) worst = all[k] > worst ? all[k] : worst;
            if (i >= 0) times[i] = worst;
        }
        qsort(times, (size_t)repeats, sizeof *times, cmp_double);
        if (rank == 0) {
            double med = times[repeats / 2];
            if (write(out_fd, &med, sizeof med) != sizeof med) goto fail;
        }
        free(times);
        free(buf);
        continue;
    fail:
        fprintf(stderr, "rank %d: %s\n", rank, err);
        cl_close(r);
        return 1;
    }
    cl_close(r);
    return 0;
}

int main(int argc, char **argv) {
    int ranks = 2, repeats = 10, bf16 = 0;
    const char *sizes_s = "1,4,16,64", *transport_s = "tcp";
    const tn_flag flags[] = {
        {"ranks", TN_FLAG_INT, &ranks, "N", "processes in the ring (2..64)"},
        {"sizes_mb", TN_FLAG_STRING, &sizes_s, "LIST", "buffer sizes in MiB"},
        {"repeats", TN_FLAG_INT, &repeats, "N", "timed calls per size (median)"},
        {"bf16", TN_FLAG_BOOL, &bf16, NULL, "bf16 on the wire"},
        {"transport", TN_FLAG_STRING, &transport_s, "tcp|shm",
         "the TCP ring, or shared memory"},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    int help;
    if (tn_flags_program("bench_allreduce",
                         "usage: bench_allreduce [--ranks=N] [--sizes_mb=1,4,16,64] "
                         "[--repeats=N] [--bf16] [--transport=tcp|shm]",
                         flags, nflags, argc, argv, &help))
        return 2;
    if (help) return 0;
    int shm = transport_s && strcmp(transport_s, "shm") == 0;
    if (!shm && strcmp(transport_s, "tcp") != 0) {
        fprintf(stderr, "bench_allreduce: error: --transport must be tcp or shm, got '%s'\n",
                transport_s);
        return 2;
    }
    if (ranks < 2 || ranks > 64 || repeats < 1) {
        fprintf(stderr, "bench_allreduce: error: --ranks must be 2..64 and --repeats >= 1\n");
        return 2;
    }
    int sizes[16], nsizes = 0;
    for (const char *p = sizes_s; *p && nsizes < 16;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 4096) {
            fprintf(stderr, "bench_allreduce: error: bad --sizes_mb '%s'\n", sizes_s);
            return 2;
        }
        sizes[nsizes++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    char addr[64][32], name[64][16];
    cl_peer peers[64];
    for (int i = 0; i < ranks; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", free_port());
        snprintf(name[i], sizeof name[i], "rank %d", i);
        peers[i] = (cl_peer){name[i], addr[i]};
    }
    int fds[2];
    if (pipe(fds)) return 1;
    pid_t pids[64];
    for (int i = 0; i < ranks; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(fds[0]);
            _exit(rank_main(i, ranks, peers, sizes, nsizes, repeats, bf16 ? CL_BF16 : CL_FP32,
                            shm ? CL_SHM : CL_TCP, fds[1]));
        }
    }
    close(fds[1]);
    fprintf(stderr, "%-8s %12s %12s %12s %14s %10s\n", "size", "median ms", "algbw GB/s",
            "busbw GB/s", "memcpy GB/s", "bus/memcpy");
    int failed = 0;
    for (int s = 0; s < nsizes; s++) {
        double med;
        if (read(fds[0], &med, sizeof med) != sizeof med) {
            failed = 1;
            break;
        }
        double bytes = (double)sizes[s] * (1u << 20);
        double alg = bytes / med / 1e9, bus = alg * 2.0 * (ranks - 1) / ranks;
        double mc = memcpy_gbps((size_t)bytes, 10);
        printf("{\"framework\": \"%s\", \"ranks\": %d, \"precision\": \"%s\", \"mb\": %d, "
               "\"seconds\": %.6f, \"algbw_gbps\": %.3f, \"busbw_gbps\": %.3f, "
               "\"memcpy_gbps\": %.3f}\n",
               shm ? "tuner-shm" : "tuner-ring", ranks, bf16 ? "bf16" : "fp32", sizes[s], med, alg,
               bus, mc);
        fprintf(stderr, "%-5d MiB %12.3f %12.3f %12.3f %14.3f %10.2f\n", sizes[s], med * 1e3, alg,
                bus, mc, bus / mc);
    }
    for (int i = 0; i < ranks; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) failed = 1;
    }
    return failed;
}
