/*
 * conv_window.h — one 2x2 pooling window of a conv block (kernels.h: conv_block_forward
 * and conv_block_backward), one definition for every backend: the CPU's scalar forms
 * (cpu_conv.c) and the CUDA kernels (cuda.cu) both call these, so the window's
 * comparisons, its choice (enum kn_pool_choice) and the activation's derivative at the
 * element taken cannot drift apart between them. (The CPU's AVX2 forms make the same
 * comparisons lane by lane; the tests compare their bits with these.)
 *
 * In C these are static inline functions; compiled by nvcc, host and device ones.
 */
#ifndef KERNELS_CONV_WINDOW_H
#define KERNELS_CONV_WINDOW_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#ifdef __CUDACC__
#define KN_WINDOW_FN static inline __host__ __device__
#else
#define KN_WINDOW_FN static inline
#endif

#define KN_WINDOW_SQRT1_2 ((float)0.70710678118654752440) /* (float)M_SQRT1_2 */

/* The activation act (enum kn_activation) of v: max(v, 0), tanh(v), v * Phi(v). */
KN_WINDOW_FN float kn_window_act(int act, float v) {
    if (act == KN_RELU) return v > 0.0f ? v : 0.0f;
    if (act == KN_TANH) return tanhf(v);
    return 0.5f * v * (1.0f + erff(v * KN_WINDOW_SQRT1_2));
}

/* The pooling of a window whose elements plus the bias are v0 .. v3 (top left, top
 * right, bottom left, bottom right): returns the pooled activation, with *choice the
 * element taken (the first of the largest activations) and *zmax its pre-activation.
 * ReLU pools first and activates the maximum, which takes the same element for a
 * quarter of the work; where that maximum is not positive every activation is 0, the
 * choice is KN_POOL_ZERO and *zmax is v0. */
KN_WINDOW_FN float kn_window_pool(int act, float v0, float v1, float v2, float v3,
                                  uint8_t *choice, float *zmax) {
    float m, zm;
    uint8_t a;
    if (act == KN_RELU) {
        m = v0;
        a = KN_POOL_TL;
        a = v1 > m ? (uint8_t)KN_POOL_TR : a;
        m = v1 > m ? v1 : m;
        a = v2 > m ? (uint8_t)KN_POOL_BL : a;
        m = v2 > m ? v2 : m;
        a = v3 > m ? (uint8_t)KN_POOL_BR : a;
        m = v3 > m ? v3 : m;
        zm = m > 0.0f ? m : v0;
        a = m > 0.0f ? a : (uint8_t)KN_POOL_ZERO;
        m = m > 0.0f ? m : 0.0f;
    } else {
        float u;
        m = kn_window_act(act, v0);
        a = KN_POOL_TL;
        zm = v0;
        if ((u = kn_window_act(act, v1)) > m) m = u, a = KN_POOL_TR, zm = v1;
        if ((u = kn_window_act(act, v2)) > m) m = u, a = KN_POOL_BL, zm = v2;
        if ((u = kn_window_act(act, v3)) > m) m = u, a = KN_POOL_BR, zm = v3;
    }
    *choice = a;
    *zmax = zm;
    return m;
}

/* The gradient of the pre-activation at a window's element taken, from g, the pooled
 * output's: ReLU g (0 where the choice is KN_POOL_ZERO); tanh g (1 - y^2), y the pooled
 * output (*y, read for tanh only); GELU g Phi'(x), x the pre-activation taken (*zmax,
 * read for GELU only). */
KN_WINDOW_FN float kn_window_grad(int act, float g, uint8_t choice, const float *y,
                                  const float *zmax) {
    if (act == KN_RELU) return choice != KN_POOL_ZERO ? g : 0.0f;
    if (act == KN_TANH) return g * (1.0f - *y * *y);
    const float inv_sqrt_2pi = 0.3989422804014327f;
    float x = *zmax;
    float cdf = 0.5f * (1.0f + erff(x * KN_WINDOW_SQRT1_2));
    float pdf = inv_sqrt_2pi * expf(-0.5f * x * x);
    return g * (cdf + x * pdf);
}

/* The offset from its window's first element of the element a choice names, in a plane
 * of row length w; KN_POOL_ZERO: the first, where the unpooling puts its zero. */
KN_WINDOW_FN ptrdiff_t kn_window_offset(uint8_t choice, ptrdiff_t w) {
    return choice == KN_POOL_ZERO ? 0 : (choice & 1) + (choice >> 1) * w;
}

#endif
