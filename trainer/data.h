/*
 * data.h — training and evaluation data in memory: MNIST-format IDX files (plain or
 * gzip) and CSV files.
 *
 * Every loader reads the whole file into one ds_dataset, checks it completely (magic
 * numbers, dimensions, sizes, label range, numbers in a CSV) and on any problem
 * returns a negative TN_E* code with a message naming the file and what is wrong:
 * a missing, truncated or malformed file is an error, never a crash. The default
 * data set is Fashion-MNIST from Debian's dataset-fashion-mnist package.
 * Design: docs/trainer.md, "Data".
 */
#ifndef TN_DATA_H
#define TN_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DS_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

typedef struct ds_dataset {
    float *x;         /* (N, D) features; IDX pixels scaled to [0, 1] */
    int32_t *y;       /* (N) class labels in [0, classes) */
    int64_t n;        /* N: number of examples */
    int32_t d;        /* D: features per example (channels * height * width for images) */
    int32_t channels; /* image shape, or all three 0 when the data are not images */
    int32_t height;
    int32_t width;
    int32_t classes;  /* number of classes: max label + 1 (at least 2) */
} ds_dataset;

/* Loads an IDX image file (magic 0x00000803, u8, N x H x W) and an IDX label file
 * (magic 0x00000801, u8, N) into out (caller-owned; release with ds_clear). Either
 * file may be gzip-compressed (detected from its content, not its name). limit > 0
 * keeps only the first `limit` examples. Labels must be < 256; classes is set to
 * max label + 1 (at least 2). On error out is left cleared. */
int ds_load_idx(const char *images_path, const char *labels_path, int64_t limit,
                ds_dataset *out, char *err, size_t errlen);

/* Loads the training (train != 0: train-images-idx3-ubyte, train-labels-idx1-ubyte)
 * or test (t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte) split from folder dir,
 * each name found as is or with ".gz". A missing folder or file is TN_ENOENT with
 * a message that names it and hints at `apt-get install dataset-fashion-mnist` or
 * --data_dir. */
int ds_load_idx_dir(const char *dir, int train, int64_t limit, ds_dataset *out,
                    char *err, size_t errlen);

/* Loads a CSV file of numbers: one example per line, one column the integer class
 * label (label_column counts from 0; negative counts from the end, -1 = last), the
 * others features, each multiplied by scale. A first line that is not all numbers is
 * a header and skipped. Empty lines are skipped; every other line must have the same
 * number of columns. Features are a flat vector (channels = height = width = 0)
 * unless D is a perfect square, in which case the shape is 1 x s x s. limit > 0
 * keeps the first `limit` examples. Errors name the file, line and column. */
int ds_load_csv(const char *path, int label_column, float scale, int64_t limit,
                ds_dataset *out, char *err, size_t errlen);

/* Frees what the data set holds and zeroes it; accepts a zeroed or NULL dataset. */
void ds_clear(ds_dataset *ds);

#endif
