/*
 * collective_internal.h — what the collectives' two transports share: the TCP ring
 * (collective.c) and shared memory (shm.c) split buffers the same way and convert to
 * and from bfloat16 the same way. Not part of any public interface.
 */
#ifndef TN_COLLECTIVE_INTERNAL_H
#define TN_COLLECTIVE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Round to nearest even, NaN kept quiet; branch-free so the loops vectorise. */
static inline uint16_t bf16_round(uint32_t u) {
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
}

static inline float bf16_widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* dst[i] = bf16(src[i]) for n elements. */
static inline void bf16_pack(uint16_t *restrict dst, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        dst[i] = bf16_round(u);
    }
}

/* Part i of n elements split into `parts` (sizes differ by at most one, the larger
 * first): [*off, *off + *len). */
static inline void split_part(size_t n, int parts, int i, size_t *off, size_t *len) {
    size_t base = n / (size_t)parts, extra = n % (size_t)parts;
    *off = (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
    *len = base + ((size_t)i < extra ? 1 : 0);
}

#endif
