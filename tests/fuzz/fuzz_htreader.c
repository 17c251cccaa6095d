/*
 * fuzz_htreader.c — libFuzzer harness for the metric-file reader (common/htreader.h),
 * through its public API only: the input becomes a metric file in a temporary folder
 * that a reader polls as the executor does while a replica writes it.
 *
 * The file is written in three stages: the input's first part (as a replica part-way
 * through a report), then the whole input (a rewrite, as cloudml-hypertune does),
 * then the whole input again after a truncation to nothing (the file started over),
 * with htr_poll after each and htr_poll_final at the end. The split point comes from
 * the input's first byte. Besides "no crash, no leak, no undefined behaviour" it
 * checks htreader.h's promises: every record has its line, its metrics JSON and
 * named metrics; the reader's counters add up to what was delivered; and every
 * non-blank line of the input was dealt with exactly once, however often the file was
 * rewritten: delivered or counted bad, except a copy of a line delivered as a record
 * with a timestamp (the same record). Seeds:
 * corpus/htreader (hypertune lines as the trainer and cloudml-hypertune write them).
 * docs/fuzzing.md.
 */
#include "tests/fuzz/fuzz_util.h"

#include "common/htreader.h"
#include "common/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The lines delivered as records with a timestamp, in one run. */
static char **g_stamped;
static size_t g_nstamped, g_capstamped;

static int was_stamped(const char *line, size_t len) {
    for (size_t i = 0; i < g_nstamped; i++)
        if (strlen(g_stamped[i]) == len && !memcmp(g_stamped[i], line, len)) return 1;
    return 0;
}

/* Polls r once (final or not) and checks what it delivered; returns the count. */
static size_t poll_once(htr_reader *r, int final) {
    htr_record *recs = NULL;
    size_t n = 0;
    char err[512] = "";
    int rc = final ? htr_poll_final(r, &recs, &n, err, sizeof err)
                   : htr_poll(r, &recs, &n, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && recs == NULL && n == 0);
        return 0;
    }
    FUZZ_CHECK((recs == NULL) == (n == 0));
    for (size_t i = 0; i < n; i++) {
        const htr_record *rec = &recs[i];
        FUZZ_CHECK(rec->line != NULL && rec->metrics_json != NULL);
        FUZZ_CHECK(rec->nmetrics == 0 || rec->metrics != NULL);
        for (size_t m = 0; m < rec->nmetrics; m++) {
            double v;
            FUZZ_CHECK(rec->metrics[m].name != NULL);
            FUZZ_CHECK(htr_record_metric(rec, rec->metrics[m].name, &v) == 1);
        }
        if (rec->timestamp_given) {
            FUZZ_CHECK(!was_stamped(rec->line, strlen(rec->line))); /* delivered once */
            if (g_nstamped == g_capstamped) {
                g_capstamped = g_capstamped ? 2 * g_capstamped : 16;
                g_stamped = realloc(g_stamped, g_capstamped * sizeof *g_stamped);
                FUZZ_CHECK(g_stamped != NULL);
            }
            g_stamped[g_nstamped++] = strdup(rec->line);
        }
    }
    htr_records_free(recs, n);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[600];
    if (!path[0]) snprintf(path, sizeof path, "%s/metrics", fuzz_dir());
    unlink(path);
    size_t split = size > 0 ? (size_t)data[0] * size / 256 : 0;
    htr_reader *r = htr_new(path);
    FUZZ_CHECK(strcmp(htr_path(r), path) == 0);
    size_t delivered = poll_once(r, 0); /* no file yet: nothing, no error */
    FUZZ_CHECK(delivered == 0);
    fuzz_write_file(path, data, split);
    delivered += poll_once(r, 0);
    fuzz_write_file(path, data, size);
    delivered += poll_once(r, 0);
    fuzz_write_file(path, data, 0);
    delivered += poll_once(r, 0);
    fuzz_write_file(path, data, size);
    delivered += poll_once(r, 0);
    delivered += poll_once(r, 1);
    htr_stats st;
    htr_get_stats(r, &st);
    FUZZ_CHECK(st.records == delivered);
    /* Each non-blank line once (a line ends at '\n'; a '\r' before it is not part of
     * it; blank: only spaces, tabs and '\r'), but the second copy of a record with a
     * timestamp. */
    size_t lines = 0;
    for (size_t pos = 0, end; pos < size; pos = end + 1) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        end = nl ? (size_t)(nl - data) : size;
        size_t len = end - pos;
        const char *line = (const char *)data + pos;
        if (len && line[len - 1] == '\r') len--;
        size_t ws = 0;
        while (ws < len && (line[ws] == ' ' || line[ws] == '\t' || line[ws] == '\r')) ws++;
        if (ws == len) continue;
        int copy = 0;
        if (!memchr(line, '\0', len) && was_stamped(line, len))
            for (size_t p = 0, e; p < pos && !copy; p = e + 1) { /* an earlier copy? */
                const uint8_t *n2 = memchr(data + p, '\n', pos - p);
                e = n2 ? (size_t)(n2 - data) : pos;
                size_t l2 = e - p;
                if (l2 && data[p + l2 - 1] == '\r') l2--;
                copy = l2 == len && !memcmp(data + p, line, len);
            }
        lines += !copy;
    }
    FUZZ_CHECK(st.records + st.bad_lines == lines);
    for (size_t i = 0; i < g_nstamped; i++) free(g_stamped[i]);
    g_nstamped = 0;
    htr_free(r);
    return 0;
}
