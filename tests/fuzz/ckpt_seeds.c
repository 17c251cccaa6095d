/*
 * ckpt_seeds.c — writes the checkpoint harness's binary seeds with the project's own
 * writer (ckpt_write), so that no binary file needs to be committed:
 *
 *   ckpt_seeds DIR
 *
 * writes DIR/seed-empty.ckpt (no sections), DIR/seed-one.ckpt (one section) and
 * DIR/seed-trainer.ckpt (the trainer's seven section tags with small contents, one of
 * them empty and some of odd lengths, so that there is padding between sections).
 * scripts/fuzz.sh runs it on the working copy of corpus/checkpoint. docs/fuzzing.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trainer/checkpoint.h"

static int put(const char *dir, const char *name, const ckpt_section *s, size_t n) {
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ckpt_write(path, s, n, err, sizeof err) != 0) {
        fprintf(stderr, "ckpt_seeds: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ckpt_seeds DIR\n");
        return 2;
    }
    static const char hello[] = "hello, checkpoint";
    uint32_t config[12] = {1, 0, 1, 0, 4, 1, 1, 3, 1, 8};
    uint64_t state[12] = {5, 1, 1, 6, 2, 0, 42};
    uint64_t rng[4] = {1, 2, 3, 4};
    float params[7] = {0.5f, -1.0f, 2.0f, 0.0f, 1e-3f, 3.0f, -0.25f};
    int32_t order[6] = {3, 1, 4, 0, 5, 2};
    ckpt_section one = {.tag = 1, .data = hello, .size = sizeof hello};
    ckpt_section trainer[] = {
        {1, config, sizeof config}, {5, state, sizeof state},   {6, rng, sizeof rng},
        {2, params, sizeof params}, {7, order, sizeof order},   {3, params, 5 * sizeof(float)},
        {4, NULL, 0},
    };
    int rc = put(argv[1], "seed-empty.ckpt", NULL, 0);
    rc |= put(argv[1], "seed-one.ckpt", &one, 1);
    rc |= put(argv[1], "seed-trainer.ckpt", trainer, sizeof trainer / sizeof trainer[0]);
    return rc;
}
