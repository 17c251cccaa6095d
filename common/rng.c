/*
 * rng.c — xoshiro256** (Blackman and Vigna, 2018) seeded with splitmix64.
 * See rng.h for the contract.
 */
#include "common/rng.h"

#include <math.h>

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
