/*
 * hypertune.h — the cloudml-hypertune metric file protocol, writer side.
 *
 * A replica reports measurements by keeping a file of JSON lines at
 * $CLOUD_ML_HP_METRIC_FILE (default /tmp/hypertune/output.metrics), one record per
 * report, e.g.
 *   {"checkpoint_path": "", "global_step": "1000", "accuracy": "0.87",
 *    "timestamp": 1525851440.12, "trial": "3"}
 * Metric values and the step are strings; the timestamp is a number. As the Python
 * library does, the writer keeps the last HT_MAX_RECORDS records and rewrites the
 * whole file on every report; it does so atomically (temporary file + rename), so a
 * reader never sees a half-written line. Records already in the file when the writer
 * opens it (a restarted replica) are kept. Contract: docs/design.md, "Metrics";
 * docs/metrics.md.
 */
#ifndef TN_HYPERTUNE_H
#define TN_HYPERTUNE_H

#include <stddef.h>
#include <stdint.h>

#define HT_DEFAULT_PATH "/tmp/hypertune/output.metrics"
#define HT_MAX_RECORDS 100

typedef struct ht_metric {
    const char *name; /* e.g. "accuracy"; must not be one of the reserved keys
                         checkpoint_path, global_step, timestamp, trial */
    double value;
} ht_metric;

typedef struct ht_writer ht_writer;

/* Opens a writer. path NULL means $CLOUD_ML_HP_METRIC_FILE or HT_DEFAULT_PATH;
 * trial NULL means $CLOUD_ML_TRIAL_ID or "". The folder is created if missing, and
 * valid records already in the file are loaded. On success *out is yours to free
 * with ht_writer_free. */
int ht_writer_open(const char *path, const char *trial, ht_writer **out, char *err,
                   size_t errlen);

/* Appends one record with the given metrics, global step, checkpoint path (NULL
 * means "") and timestamp (seconds since the epoch), and rewrites the file. */
int ht_report(ht_writer *w, int64_t global_step, const ht_metric *metrics, size_t n,
              const char *checkpoint_path, double timestamp, char *err, size_t errlen);

/* The file this writer writes; owned by w. */
const char *ht_writer_path(const ht_writer *w);

void ht_writer_free(ht_writer *w);

#endif
