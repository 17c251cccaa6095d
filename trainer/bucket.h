/*
 * bucket.h — the multi-worker gradient all-reduce, in buckets, overlapped with the
 * backward pass.
 *
 * The gradient buffer is cut at layer boundaries into buckets of at least a given
 * size, counted from the end (the backward pass finishes the last layer first). A
 * communication thread all-reduces each bucket over the ring as soon as the backward
 * pass reports it final (bk_ready, called from mdl_model.grads_ready), while the main
 * thread goes on computing the earlier layers' gradients; bk_finish waits for the
 * last bucket. Every replica cuts the same buckets in the same order, so the
 * collectives line up. The ring is used by this thread only between bk_begin and
 * bk_finish; the caller keeps its own collectives outside that window.
 */
#ifndef TN_BUCKET_H
#define TN_BUCKET_H

#include <stddef.h>

#include "trainer/collective.h"

typedef struct bk_reducer bk_reducer;

/* A reducer of buf (n floats, host memory) over ring. starts[0..nstarts) are the
 * offsets where layers begin (ascending, starts[0] = 0); buckets hold whole layers
 * and at least bucket_floats floats (0: one bucket, all-reduced once the backward
 * pass is over: no overlap); the last bucket runs to n, so words after the last
 * layer (control words) travel with it. Yours; free with bk_free. */
bk_reducer *bk_new(cl_ring *ring, float *buf, size_t n, const size_t *starts, int nstarts,
                   size_t bucket_floats, int precision);
void bk_free(bk_reducer *b);

/* Number of buckets. */
int bk_count(const bk_reducer *b);

/* Starts a step: nothing is final yet. */
void bk_begin(bk_reducer *b);

/* Elements [lo, n) are final: buckets that lie within them can go. */
void bk_ready(bk_reducer *b, size_t lo);

/* Marks everything final and waits until every bucket is summed. 0, or the first
 * collective's error (the ring is then unusable). */
int bk_finish(bk_reducer *b, char *err, size_t errlen);

#endif
