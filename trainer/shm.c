/*
 * shm.c — the shared-memory all-reduce (see shm.h for the protocol).
 *
 * The segment, in order: the head (magic, ranks, slot size, cookie, who gave up),
 * one rank_block per rank (its counters and headers), then the slots, [2][n][slot],
 * from a page boundary. Counters are 32-bit chunk counts that wrap; "reached" is a
 * signed difference. A counter is posted with a sequentially consistent store and
 * woken only if someone sleeps on it; a sleeper announces itself before it looks at
 * the value a last time, so between the two one of them always sees the other.
 */
#define _GNU_SOURCE
#include "trainer/shm.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/rng.h"
#include "common/status.h"
#include "trainer/collective_internal.h"
#include "trainer/net.h"

#define SEG_MAGIC "TNSHM001"
#define LINE 64
#define SEGMENT_BUDGET (16u << 20) /* both sets of slots, all ranks */
#define MAX_SLOT (2u << 20)
#define MIN_SLOT (64u << 10)
#define SPINS 1000                 /* pauses before yielding: some microseconds */
#define NAP_MS 5                   /* a sleeper's liveness checks, this often */

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the segment needs address-free atomics");

enum { WRITTEN, REDUCED, READ, PHASES };

typedef struct counter {
    _Alignas(LINE) atomic_uint value; /* chunks this rank has taken through the phase */
    atomic_uint sleepers;             /* ranks asleep on value */
} counter;

typedef struct rank_block {
    counter c[PHASES];
    _Alignas(LINE) unsigned char header[2][16]; /* the collective's header, per set */
    char why[256];                              /* why this rank gave up */
} rank_block;

typedef struct seg_head {
    char magic[8];
    uint32_t n;                       /* ranks */
    uint32_t slot_bytes;              /* one slot */
    uint64_t cookie[2];               /* from rank 0, checked by the others */
    uint64_t size;                    /* the whole segment */
    _Alignas(LINE) atomic_uint aborted; /* 1 + the rank that gave up first; 0: none */
} seg_head;

struct sm_seg {
    void *base;                /* the mapping */
    size_t size;
    int n, rank;
    seg_head *head;
    rank_block *blocks;        /* (n) */
    char *slots;               /* (2, n, slot_bytes) */
    size_t slot_bytes;
    uint64_t chunks;           /* chunks all-reduced so far (the counters' full value) */
    char (*names)[96];         /* (n) for messages */
};

const char *sm_dir(void) {
    const char *d = getenv("TRAINER_SHM_DIR");
    return d && *d ? d : "/dev/shm";
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

static size_t slot_size(int n) {
    size_t s = SEGMENT_BUDGET / (2 * (size_t)n);
    s = s > MAX_SLOT ? MAX_SLOT : s < MIN_SLOT ? MIN_SLOT : s;
    return s / LINE * LINE;
}

static size_t blocks_offset(void) { return round_up(sizeof(seg_head), LINE); }

static size_t slots_offset(int n) {
    return round_up(blocks_offset() + (size_t)n * sizeof(rank_block), 4096);
}

static size_t segment_size(int n, size_t slot) { return slots_offset(n) + 2 * (size_t)n * slot; }

static char *slot(const sm_seg *s, uint64_t chunk, int q) {
    return s->slots + ((size_t)(chunk & 1) * (size_t)s->n + (size_t)q) * s->slot_bytes;
}

static void path_of(const char *name, char *path, size_t len) {
    snprintf(path, len, "%s/%s", sm_dir(), name);
}

/* Fills in the handle from a mapping whose head is already valid. */
static sm_seg *handle(void *base, size_t size, int rank, const char *const *names) {
    sm_seg *s = tn_xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->base = base;
    s->size = size;
    s->head = base;
    s->n = (int)s->head->n;
    s->rank = rank;
    s->slot_bytes = s->head->slot_bytes;
    s->blocks = (rank_block *)((char *)base + blocks_offset());
    s->slots = (char *)base + slots_offset(s->n);
    s->names = tn_xmalloc((size_t)s->n * sizeof *s->names);
    for (int q = 0; q < s->n; q++) snprintf(s->names[q], sizeof s->names[q], "%s", names[q]);
    return s;
}

int sm_create(int n, const char *const *names, char *name, size_t namelen,
              uint64_t cookie[2], sm_seg **out, char *err, size_t errlen) {
    uint64_t rnd[3];
    int rc = tn_random_bytes(rnd, sizeof rnd, err, errlen);
    if (rc) return rc;
    snprintf(name, namelen, "trainer-allreduce-%ld-%016llx", (long)getpid(),
             (unsigned long long)rnd[0]);
    char path[4096];
    path_of(name, path, sizeof path);
    size_t slot_bytes = slot_size(n), size = segment_size(n, slot_bytes);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return tn_error(err, errlen, TN_EIO, "cannot create %s: %s", path, strerror(errno));
    /* reserve the pages now: a full tmpfs must fail here, not fault on a write later */
    int e = posix_fallocate(fd, 0, (off_t)size);
    void *base = MAP_FAILED;
    if (!e) {
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) e = errno;
    }
    close(fd);
    if (e) {
        unlink(path);
        return tn_error(err, errlen, TN_EIO, "cannot reserve %.1f MiB in %s: %s", size / 1048576.0,
                        sm_dir(), strerror(e));
    }
    seg_head *h = base; /* the file is zero-filled: counters 0, nobody gave up */
    h->n = (uint32_t)n;
    h->slot_bytes = (uint32_t)slot_bytes;
    h->cookie[0] = cookie[0] = rnd[1];
    h->cookie[1] = cookie[1] = rnd[2];
    h->size = size;
    memcpy(h->magic, SEG_MAGIC, 8);
    *out = handle(base, size, 0, names);
    return 0;
}

int sm_attach(const char *name, const uint64_t cookie[2], int n, int rank,
              const char *const *names, sm_seg **out, char *err, size_t errlen) {
    char path[4096];
    path_of(name, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return tn_error(err, errlen, TN_EIO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    void *base = MAP_FAILED;
    size_t size = 0;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(seg_head)) {
        size = (size_t)st.st_size;
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (base == MAP_FAILED)
        return tn_error(err, errlen, TN_EIO, "cannot map %s: %s", path,
                        size ? strerror(errno) : "too short to be a segment");
    const seg_head *h = base;
    if (memcmp(h->magic, SEG_MAGIC, 8) != 0 || h->cookie[0] != cookie[0] ||
        h->cookie[1] != cookie[1] || h->n != (uint32_t)n || h->size != size ||
        h->slot_bytes < LINE || h->slot_bytes % LINE ||
        segment_size(n, h->slot_bytes) != size) {
        munmap(base, size);
        return tn_error(err, errlen, TN_EMISMATCH, "%s is not the chief's segment", path);
    }
    *out = handle(base, size, rank, names);
    return 0;
}

void sm_unlink(const char *name) {
    char path[4096];
    path_of(name, path, sizeof path);
    unlink(path);
}

void sm_close(sm_seg *s) {
    if (!s) return;
    munmap(s->base, s->size);
    free(s->names);
    free(s);
}

/* ---- waiting ---- */

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int futex(atomic_uint *word, int op, unsigned val, const struct timespec *ts) {
    return (int)syscall(SYS_futex, (unsigned *)word, op, val, ts, NULL, 0);
}

static void post(counter *c, uint32_t v) {
    atomic_store(&c->value, v);
    if (atomic_load(&c->sleepers)) futex(&c->value, FUTEX_WAKE, INT_MAX, NULL);
}

static int reached(counter *c, uint32_t want) {
    return (int32_t)(atomic_load_explicit(&c->value, memory_order_acquire) - want) >= 0;
}

static int given_up(const sm_seg *s, char *err, size_t errlen) {
    unsigned a = atomic_load_explicit(&s->head->aborted, memory_order_acquire);
    if (!a || (int)a - 1 == s->rank || a > (unsigned)s->n) return 0;
    const char *why = s->blocks[a - 1].why;
    return tn_error(err, errlen, TN_EPEER, "%s gave up: %.*s", s->names[a - 1],
                    (int)strnlen(why, sizeof s->blocks[0].why), why);
}

/* Waits until every other rank has taken `want` chunks through `phase`. */
static int wait_all(sm_seg *s, int phase, uint32_t want, double timeout, const sm_hooks *hk,
                    char *err, size_t errlen) {
    for (int q = 0; q < s->n; q++) {
        counter *c = &s->blocks[q].c[phase];
        if (q == s->rank || reached(c, want)) continue;
        for (int i = 0; i < SPINS && !reached(c, want); i++) relax();
        /* a sleeping core is slow to wake: stay awake a while, as nt_poll does */
        for (double until = nt_now() + NT_AWAKE_S; !reached(c, want) && nt_now() < until;)
            sched_yield();
        double deadline = 0;
        while (!reached(c, want)) {
            int rc = given_up(s, err, errlen);
            if (rc) return rc;
            atomic_fetch_add(&c->sleepers, 1);
            unsigned v = atomic_load(&c->value);
            int napped = 0;
            if ((int32_t)(v - want) < 0) {
                struct timespec ts = {0, NAP_MS * 1000000L};
                napped = futex(&c->value, FUTEX_WAIT, v, &ts) < 0 && errno == ETIMEDOUT;
            }
            atomic_fetch_sub(&c->sleepers, 1);
            if (!napped) continue;
            if (hk->alive && (rc = hk->alive(hk->ctx, err, errlen))) return rc;
            double now = nt_now();
            if (!deadline) deadline = now + timeout;
            if (now > deadline)
                return tn_error(err, errlen, TN_EPEER,
                                "no progress for %.0f s: %s is not answering (hung, stopped or "
                                "too slow); hint: raise --peer_timeout if a step can take longer",
                                timeout, s->names[q]);
        }
    }
    return 0;
}

void sm_abort(sm_seg *s, const char *why) {
    rank_block *me = &s->blocks[s->rank];
    snprintf(me->why, sizeof me->why, "%s", why);
    unsigned none = 0;
    atomic_compare_exchange_strong(&s->head->aborted, &none, (unsigned)s->rank + 1);
    for (int q = 0; q < s->n; q++)
        for (int p = 0; p < PHASES; p++)
            futex(&s->blocks[q].c[p].value, FUTEX_WAKE, INT_MAX, NULL);
}

/* ---- moving and summing ---- */

/* Copies src[from, to) into the slot (as bf16 or float). */
static void put(void *dst, const float *src, size_t from, size_t to, int bf16) {
    if (to <= from) return;
    if (bf16)
        bf16_pack((uint16_t *)dst + from, src + from, to - from);
    else
        memcpy((float *)dst + from, src + from, (to - from) * sizeof(float));
}

static void add(float *restrict dst, const void *src, size_t n, int bf16) {
    if (bf16) {
        const uint16_t *restrict h = src;
        for (size_t i = 0; i < n; i++) dst[i] += bf16_widen(h[i]);
    } else {
        const float *restrict f = src;
        for (size_t i = 0; i < n; i++) dst[i] += f[i];
    }
}

static void get(float *restrict dst, const void *src, size_t n, int bf16) {
    if (bf16) {
        const uint16_t *restrict h = src;
        for (size_t i = 0; i < n; i++) dst[i] = bf16_widen(h[i]);
    } else {
        memcpy(dst, src, n * sizeof(float));
    }
}

int sm_allreduce(sm_seg *s, float *buf, size_t n, int bf16, const void *header,
                 double timeout, const sm_hooks *hk, char *err, size_t errlen) {
    size_t esize = bf16 ? 2 : 4, per = s->slot_bytes / esize;
    rank_block *me = &s->blocks[s->rank];
    for (size_t off = 0; off < n; off += per) {
        size_t len = n - off < per ? n - off : per, po, pl;
        uint64_t g = s->chunks;
        float *x = buf + off;
        char *mine = slot(s, g, s->rank);
        int rc;
        /* 1. this set was chunk g-2's: wait until every rank has read it */
        if (g >= 2 && (rc = wait_all(s, READ, (uint32_t)(g - 1), timeout, hk, err, errlen)))
            return rc;
        memcpy(me->header[g & 1], header, 16);
        split_part(len, s->n, s->rank, &po, &pl);
        put(mine, x, 0, po, bf16);
        put(mine, x, po + pl, len, bf16);
        post(&me->c[WRITTEN], (uint32_t)(g + 1));
        if ((rc = wait_all(s, WRITTEN, (uint32_t)(g + 1), timeout, hk, err, errlen))) return rc;
        for (int q = 0; q < s->n; q++)
            if (q != s->rank && memcmp(s->blocks[q].header[g & 1], header, 16)) {
                rc = hk->mismatch ? hk->mismatch(hk->ctx, q, header, s->blocks[q].header[g & 1],
                                                 err, errlen)
                                  : 0;
                return rc ? rc
                          : tn_error(err, errlen, TN_EPEER, "replicas out of step: %s is at "
                                     "another collective", s->names[q]);
            }
        /* 2. sum this rank's part: its own values, then the others' in rank order */
        for (int q = 0; q < s->n; q++)
            if (q != s->rank) add(x + po, slot(s, g, q) + po * esize, pl, bf16);
        if (bf16) { /* round the sum as the others will read it: the same bits everywhere */
            bf16_pack((uint16_t *)mine + po, x + po, pl);
            get(x + po, (uint16_t *)mine + po, pl, 1);
        } else {
            memcpy((float *)mine + po, x + po, pl * sizeof(float));
        }
        post(&me->c[REDUCED], (uint32_t)(g + 1));
        if ((rc = wait_all(s, REDUCED, (uint32_t)(g + 1), timeout, hk, err, errlen))) return rc;
        /* 3. gather the other parts' sums */
        for (int q = 0; q < s->n; q++) {
            size_t qo, ql;
            if (q == s->rank) continue;
            split_part(len, s->n, q, &qo, &ql);
            get(x + qo, slot(s, g, q) + qo * esize, ql, bf16);
        }
        post(&me->c[READ], (uint32_t)(g + 1));
        s->chunks++;
    }
    return 0;
}
