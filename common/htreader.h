/*
 * htreader.h — the cloudml-hypertune metric file protocol, reader side.
 *
 * A replica reports measurements as JSON lines in its metric file (hypertune.h is our
 * writer). The cloudml-hypertune library rewrites the whole file on every report,
 * keeping the last 100 records (not atomically: it truncates and writes), and a
 * program may also append. The executor polls the file while the replica runs; each
 * poll re-reads the file (at most its last HTR_MAX_READ bytes) and returns the
 * records not delivered before, in file order, so every record is delivered exactly
 * once however the file is rewritten. A record with a timestamp is identified by its
 * timestamp (as an exact double) together with its full line text; one without, by
 * its text and which copy of that text it is (two identical lines appended are two
 * reports). A last line without its newline is being written and waits for the next
 * poll; lines that are not JSON objects are skipped and counted, and bytes that are
 * not UTF-8 are read as U+FFFD. The rules are written down in docs/metrics.md;
 * contract:
 * docs/design.md, "Metrics"; docs/metrics.md.
 */
#ifndef TN_HTREADER_H
#define TN_HTREADER_H

#include <stddef.h>
#include <stdint.h>

#define HTR_MAX_READ (1 << 20) /* bytes read from the end of a larger file */

typedef struct htr_metric {
    char *name;   /* e.g. "accuracy" */
    double value; /* may be NaN or infinite ("nan", "inf" in the file) */
} htr_metric;

/* One measurement, as read from one line. Every pointer is owned by the record. */
typedef struct htr_record {
    int64_t step;           /* global_step (a string or a number); when absent or not
                               an integer, the record's ordinal among the records this
                               reader delivered, from 1 */
    int step_given;         /* 1 when step came from global_step */
    double timestamp;       /* "timestamp" (seconds since the epoch); when absent, the
                               ordinal, as for step */
    int timestamp_given;    /* 1 when timestamp came from the record */
    char *trial;            /* "trial" (a string, or an integer written in decimal), or
                               NULL */
    char *checkpoint_path;  /* "checkpoint_path", or NULL */
    htr_metric *metrics;    /* every other key whose value is a number or a numeric
                               string, in the line's key order; non-finite included */
    size_t nmetrics;
    char *metrics_json;     /* the finite metrics as a compact JSON object of numbers,
                               e.g. {"accuracy":0.87,"loss":0.45}; "{}" when none */
    size_t ndropped;        /* non-finite metrics left out of metrics_json */
    size_t nignored;        /* other keys left out because their value is not numeric */
    char *line;             /* the line as read, without its newline */
} htr_record;

/* What a reader has seen so far. */
typedef struct htr_stats {
    size_t polls;           /* htr_poll and htr_poll_final calls that succeeded */
    size_t records;         /* records delivered */
    size_t bad_lines;       /* lines that were not JSON objects, each counted once
                               however often the file is re-read */
    size_t dropped;         /* non-finite metric values left out of metrics_json */
    size_t ignored;         /* non-numeric values of non-reserved keys */
    int truncated;          /* the latest read found the file larger than
                               HTR_MAX_READ and read only its end */
    int line_too_long;      /* ... and that end held no whole line: a line (a record
                               being written, or one) longer than HTR_MAX_READ */
} htr_stats;

typedef struct htr_reader htr_reader;

/* A reader of the metric file at path (copied); the file need not exist yet.
 * Never NULL (aborts on out-of-memory); yours to free with htr_free. */
htr_reader *htr_new(const char *path);

/* Reads the file and returns the records not delivered before, in file order: *out
 * gets an array of *n records (NULL and 0 when none), yours to free with
 * htr_records_free. A missing file is not an error (nothing yet). Returns 0, or
 * TN_EIO (the file cannot be read, or is not a regular file) with a message naming
 * the file; *out and *n are then NULL and 0. */
int htr_poll(htr_reader *r, htr_record **out, size_t *n, char *err, size_t errlen);

/* As htr_poll, but also takes a last line without its newline when it is a whole
 * JSON object: for the final read after the replica has exited, when nobody is
 * still writing it. */
int htr_poll_final(htr_reader *r, htr_record **out, size_t *n, char *err, size_t errlen);

/* Looks up the metric called name in rec: returns 1 and stores its value (which may
 * be non-finite) in *value, or returns 0 when rec has no such metric. */
int htr_record_metric(const htr_record *rec, const char *name, double *value);

/* Frees an array of n records from htr_poll (NULL is fine). */
void htr_records_free(htr_record *recs, size_t n);

/* Copies the reader's counters into *out. */
void htr_get_stats(const htr_reader *r, htr_stats *out);

/* The file this reader reads; owned by r. */
const char *htr_path(const htr_reader *r);

void htr_free(htr_reader *r);

#endif
