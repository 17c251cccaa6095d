/*
 * rng.h — a small, fast, seedable random number generator (xoshiro256**, seeded by
 * splitmix64) whose whole state is a plain struct, so that it can be saved in a
 * checkpoint and restored to continue the exact same sequence.
 *
 * Used wherever the project needs reproducible randomness: weight initialisation,
 * data order and dropout in the trainer, sampling in search/. Never reads a clock.
 *
 * Beside it, the one source of unpredictable randomness (tn_random_bytes, the
 * kernel's getrandom), for what must not be guessed or repeat: a store's identity,
 * the dashboard's token, a seed nobody gave.
 */
#ifndef TN_RNG_H
#define TN_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct tn_rng {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
} tn_rng;

/* Seeds the generator; any seed (including 0) gives a valid, distinct stream. */
void tn_rng_seed(tn_rng *r, uint64_t seed);

uint64_t tn_rng_u64(tn_rng *r);

/* splitmix64's finaliser: a stateless bijection of 64-bit words, for deriving the
 * seed of one use of randomness from others (seed, trial index, purpose). */
uint64_t tn_mix64(uint64_t z);

/* Uniform in [0, 1) with 53 (double) or 24 (float) random bits. */
double tn_rng_uniform(tn_rng *r);
float tn_rng_uniformf(tn_rng *r);

/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t tn_rng_below(tn_rng *r, uint64_t n);

/* Standard normal (Box-Muller; uses two uniforms per call, no cached spare, so the
 * state alone determines the sequence). */
double tn_rng_normal(tn_rng *r);

/* Fills buf with n bytes from getrandom(), going on after a signal (EINTR) or a short
 * read (one call gives at most 32 MiB). Returns 0, or TN_EIO with a message saying
 * why (as "getrandom: Function not implemented"). */
int tn_random_bytes(void *buf, size_t n, char *err, size_t errlen);

/* nbytes such bytes as 2 * nbytes lowercase hex digits into out, which holds
 * 2 * nbytes + 1 chars (NUL-terminated). Returns as tn_random_bytes; out is "" on
 * failure. */
int tn_random_hex(char *out, size_t nbytes, char *err, size_t errlen);

#endif
