/*
 * rng.c — xoshiro256** (Blackman and Vigna, 2018) seeded with splitmix64, and the
 * kernel's randomness for what must not be guessed. See rng.h for the contract.
 */
#include "common/rng.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "common/status.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void tn_rng_seed(tn_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t tn_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t tn_rng_u64(tn_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double tn_rng_uniform(tn_rng *r) { return (double)(tn_rng_u64(r) >> 11) * 0x1.0p-53; }

float tn_rng_uniformf(tn_rng *r) { return (float)(tn_rng_u64(r) >> 40) * 0x1.0p-24f; }

uint64_t tn_rng_below(tn_rng *r, uint64_t n) {
    /* Rejection sampling: drop the top partial block of the 2^64 range. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = tn_rng_u64(r);
    } while (x >= limit);
    return x % n;
}

double tn_rng_normal(tn_rng *r) {
    double u1 = 1.0 - tn_rng_uniform(r); /* (0, 1] so log() is finite */
    double u2 = tn_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int tn_random_bytes(void *buf, size_t n, char *err, size_t errlen) {
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return tn_error(err, errlen, TN_EIO, "getrandom: %s", strerror(errno));
        got += (size_t)r;
    }
    return 0;
}

int tn_random_hex(char *out, size_t nbytes, char *err, size_t errlen) {
    static const char digits[] = "0123456789abcdef";
    out[0] = '\0';
    /* the bytes go into the back half of out, and each is read before the two digits
     * written in its place reach it */
    unsigned char *raw = (unsigned char *)out + nbytes;
    int rc = tn_random_bytes(raw, nbytes, err, errlen);
    if (rc) return rc;
    for (size_t i = 0; i < nbytes; i++) {
        unsigned char b = raw[i];
        out[2 * i] = digits[b >> 4];
        out[2 * i + 1] = digits[b & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}
