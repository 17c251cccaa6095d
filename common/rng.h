/*
 * rng.h — a small, fast, seedable random number generator (xoshiro256**, seeded by
 * splitmix64) whose whole state is a plain struct, so that it can be saved in a
 * checkpoint and restored to continue the exact same sequence.
 *
 * Used wherever the project needs reproducible randomness: weight initialisation,
 * data order and dropout in the trainer, sampling in search/. Never reads a clock.
 */
#ifndef TN_RNG_H
#define TN_RNG_H

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

#endif
