/*
 * flags.c — command-line flag parsing (see flags.h).
 */
#include "common/flags.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"
#include "common/text.h"

#define MAX_FLAGS 128

/* Which flags of which table were given at the last parse (one table at a time). */
static const tn_flag *given_table;
static unsigned char given[MAX_FLAGS];

/* Finds the flag whose name equals s[0..len) with '-' read as '_'. */
static const tn_flag *find_flag(const tn_flag *flags, size_t n, const char *s, size_t len) {
    for (size_t i = 0; i < n; i++) {
        const char *name = flags[i].name;
        if (strlen(name) != len) continue;
        size_t j = 0;
        while (j < len && (s[j] == '-' ? '_' : s[j]) == name[j]) j++;
        if (j == len) return &flags[i];
    }
    return NULL;
}

static int parse_value(const tn_flag *f, const char *v, char *err, size_t errlen) {
    char *end;
    errno = 0;
    switch (f->type) {
    case TN_FLAG_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) {
            *(int *)f->value = 1;
        } else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) {
            *(int *)f->value = 0;
        } else {
            return tn_error(err, errlen, TN_EINVAL, "--%s expects true or false, got '%s'",
                            f->name, v);
        }
        return 0;
    case TN_FLAG_INT:
    case TN_FLAG_INT64: {
        long long x = strtoll(v, &end, 10);
        long long lo = f->type == TN_FLAG_INT ? INT_MIN : INT64_MIN;
        long long hi = f->type == TN_FLAG_INT ? INT_MAX : INT64_MAX;
        if (end == v || *end || errno == ERANGE || x < lo || x > hi)
            return tn_error(err, errlen, TN_EINVAL, "--%s expects an integer, got '%s'", f->name,
                            v);
        if (f->type == TN_FLAG_INT)
            *(int *)f->value = (int)x;
        else
            *(int64_t *)f->value = x;
        return 0;
    }
    case TN_FLAG_DOUBLE: {
        const char *digits = v;
        while (isspace((unsigned char)*digits)) digits++; /* as strtod skips them */
        digits += *digits == '+' || *digits == '-';       /* decimal: not strtod's 0x10 */
        int hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
        double x = strtod(v, &end);
        if (hex || end == v || *end || !isfinite(x))
            return tn_error(err, errlen, TN_EINVAL, "--%s expects a number, got '%s'", f->name, v);
        *(double *)f->value = x;
        return 0;
    }
    default:
        *(const char **)f->value = v;
        return 0;
    }
}

static int unknown_flag(const tn_flag *flags, size_t n, const char *name, size_t len,
                        char *err, size_t errlen) {
    char *word = tn_xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) word[i] = name[i] == '-' ? '_' : name[i];
    word[len] = '\0';
    const char *names[MAX_FLAGS];
    for (size_t i = 0; i < n; i++) names[i] = flags[i].name;
    const char *best = tn_closest(word, names, n);
    int rc;
    if (best)
        rc = tn_error(err, errlen, TN_EINVAL, "unknown flag --%.*s (did you mean --%s?)",
                      (int)len, name, best);
    else
        rc = tn_error(err, errlen, TN_EINVAL, "unknown flag --%.*s", (int)len, name);
    free(word);
    return rc;
}

/* Whether a is a negative number ("-0.7", "-5", "-1e-3", "-.5", and "-inf", "-nan",
 * which a value's own check then refuses by name): a value, not a flag. */
static int negative_number(const char *a) {
    if (a[0] != '-' || !(isdigit((unsigned char)a[1]) || a[1] == '.' ||
                         strncasecmp(a + 1, "inf", 3) == 0 || strncasecmp(a + 1, "nan", 3) == 0))
        return 0;
    char *end;
    (void)strtod(a, &end);
    return end != a && *end == '\0';
}

int tn_flags_parse(const tn_flag *flags, size_t n, int argc, char **argv, int *positional,
                   int max_positional, int *npositional, int *help, char *err, size_t errlen) {
    *help = 0;
    if (n > MAX_FLAGS) return tn_error(err, errlen, TN_EINVAL, "too many flags in table");
    given_table = flags;
    memset(given, 0, sizeof given);
    int npos = 0, only_positional = 0;
    if (npositional) *npositional = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *help = 1;
            return 0;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || !strcmp(a, "-") || negative_number(a)) {
            if (npos >= max_positional || !positional)
                return tn_error(err, errlen, TN_EINVAL, "unexpected argument '%s'", a);
            positional[npos++] = i;
            if (npositional) *npositional = npos;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_positional = 1;
            continue;
        }
        if (a[1] != '-')
            return tn_error(err, errlen, TN_EINVAL, "unknown option '%s' (flags start with --)", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const tn_flag *f = find_flag(flags, n, name, len);
        if (!f) return unknown_flag(flags, n, name, len, err, errlen);
        const char *value;
        if (eq) {
            value = eq + 1;
        } else if (f->type == TN_FLAG_BOOL) {
            value = "true";
        } else if (i + 1 < argc && !(argv[i + 1][0] == '-' && argv[i + 1][1] == '-')) {
            value = argv[++i];
        } else { /* none, or the next word is a flag ("--db --quiet"): --name=--x says so */
            return tn_error(err, errlen, TN_EINVAL, "--%s needs a value (--%s=%s)", f->name,
                            f->name, f->arg ? f->arg : "VALUE");
        }
        int rc = parse_value(f, value, err, errlen);
        if (rc) return rc;
        given[f - flags] = 1;
    }
    return 0;
}

int tn_flags_program(const char *program, const char *usage, const tn_flag *flags, size_t n,
                     int argc, char **argv, int *help) {
    char err[512];
    int rc = tn_flags_parse(flags, n, argc, argv, NULL, 0, NULL, help, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: error: %s\nhint: run '%s --help'\n", program, err, program);
        return rc;
    }
    if (*help) {
        if (usage) printf("%s\n", usage);
        tn_flags_help(stdout, flags, n, '_');
    }
    return 0;
}

int tn_flags_given(const tn_flag *flags, size_t n, const char *name) {
    if (flags != given_table) return 0;
    const tn_flag *f = find_flag(flags, n, name, strlen(name));
    return f ? given[f - flags] : 0;
}

void tn_flags_help(FILE *out, const tn_flag *flags, size_t n, char joiner) {
    for (size_t i = 0; i < n; i++) {
        const tn_flag *f = &flags[i];
        char left[64], def[96];
        if (f->type == TN_FLAG_BOOL)
            snprintf(left, sizeof left, "--%s", f->name);
        else
            snprintf(left, sizeof left, "--%s=%s", f->name, f->arg ? f->arg : "VALUE");
        for (char *c = left + 2; *c && *c != '='; c++)
            if (*c == '_') *c = joiner;
        def[0] = '\0';
        switch (f->type) {
        case TN_FLAG_BOOL: snprintf(def, sizeof def, "%s", *(int *)f->value ? "true" : "false"); break;
        case TN_FLAG_INT: snprintf(def, sizeof def, "%d", *(int *)f->value); break;
        case TN_FLAG_INT64: snprintf(def, sizeof def, "%lld", (long long)*(int64_t *)f->value); break;
        case TN_FLAG_DOUBLE: tn_format_double(*(double *)f->value, def, sizeof def); break;
        default: {
            const char *s = *(const char **)f->value;
            snprintf(def, sizeof def, "%s", s ? s : "");
        }
        }
        if (strlen(left) <= 26)
            fprintf(out, "  %-26s %s", left, f->help);
        else
            fprintf(out, "  %s\n  %-26s %s", left, "", f->help);
        /* (a help that says its default itself, as "random, stored" for -1, keeps it) */
        if (def[0] && !(f->type == TN_FLAG_BOOL && !*(int *)f->value) &&
            !strstr(f->help, "(default"))
            fprintf(out, " (default: %s)", def);
        fputc('\n', out);
    }
}
