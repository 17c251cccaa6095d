/*
 * tfconfig.c — TF_CONFIG emit and parse (see tfconfig.h).
 *
 * Parsing walks the JSON with jansson and fills a tf_config, naming the field of the
 * first problem; what does not depend on the JSON shape (addresses, index ranges) is
 * left to tf_config_check, which the executor can also run on what it built.
 */
#include "common/tfconfig.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/text.h"

static const char *const k_type_names[TF_NTYPES] = {"chief", "worker", "ps", "evaluator"};

void tf_config_init(tf_config *c) {
    memset(c, 0, sizeof *c);
    c->type = TF_CHIEF;
    c->index = 0;
}

void tf_config_clear(tf_config *c) {
    if (!c) return;
    for (int t = 0; t < TF_NCLUSTER; t++) {
        for (size_t i = 0; i < c->cluster[t].n; i++) free(c->cluster[t].addr[i]);
        free(c->cluster[t].addr);
    }
    free(c->trial);
    json_decref(c->job);
    free(c->environment);
    tf_config_init(c);
}

void tf_config_add(tf_config *c, int type, const char *addr) {
    assert(type >= 0 && type < TF_NCLUSTER);
    tf_list *l = &c->cluster[type];
    l->addr = tn_xrealloc(l->addr, (l->n + 1) * sizeof *l->addr);
    l->addr[l->n++] = tn_xstrdup(addr);
}

void tf_config_set_task(tf_config *c, int type, int index, const char *trial) {
    c->type = type;
    c->index = index;
    free(c->trial);
    c->trial = trial ? tn_xstrdup(trial) : NULL;
}

void tf_config_set_job(tf_config *c, json_t *job) {
    json_incref(job);
    json_decref(c->job);
    c->job = job;
}

const char *tf_type_label(int type, int master) {
    if (type == TF_CHIEF && master) return "master";
    if (type < 0 || type >= TF_NTYPES) return "?";
    return k_type_names[type];
}

int tf_type_parse(const char *name) {
    if (!strcmp(name, "master")) return TF_CHIEF;
    for (int t = 0; t < TF_NTYPES; t++)
        if (!strcmp(name, k_type_names[t])) return t;
    return -1;
}

const char *tf_type_name(const tf_config *c, int type) { return tf_type_label(type, c->master); }

/* ---------------------------------------------------------------------------------
 * Addresses
 * --------------------------------------------------------------------------------- */

/* What is wrong with addr as "host:port", or NULL when nothing is; on success the
 * host (brackets removed) is addr[*host_off .. *host_off + *host_len) and *port the
 * port. */
static const char *address_problem(const char *addr, size_t *host_off, size_t *host_len,
                                   int *port) {
    const char *colon = strrchr(addr, ':');
    if (!colon) return "it has no :port";
    size_t off = 0, len = (size_t)(colon - addr);
    if (len == 0) return "the host is empty";
    if (addr[0] == '[') {
        if (addr[len - 1] != ']') return "an IPv6 host in brackets needs its closing ']'";
        off = 1;
        len -= 2;
        if (len == 0) return "the host is empty";
        for (size_t i = off; i < off + len; i++)
            if (addr[i] == '[' || addr[i] == ']') return "the host contains a stray bracket";
    } else {
        for (size_t i = 0; i < len; i++) {
            if (addr[i] == ':') return "an IPv6 host needs brackets, as in [::1]:2222";
            if (addr[i] == '[' || addr[i] == ']') return "the host contains a stray bracket";
        }
    }
    for (size_t i = off; i < off + len; i++) {
        unsigned char ch = (unsigned char)addr[i];
        if (isspace(ch) || iscntrl(ch) || ch == '/')
            return "the host contains a space, control character or '/'";
    }
    const char *p = colon + 1;
    if (!*p) return "the port is empty";
    long v = 0;
    for (const char *q = p; *q; q++) {
        if (!isdigit((unsigned char)*q)) return "the port is not a number";
        if (q - p >= 5) return "the port is out of range 1..65535";
        v = v * 10 + (*q - '0');
    }
    if (v < 1 || v > 65535) return "the port is out of range 1..65535";
    *host_off = off;
    *host_len = len;
    *port = (int)v;
    return NULL;
}

int tf_split_address(const char *addr, char *host, size_t hostlen, int *port, char *err,
                     size_t errlen) {
    size_t off, len;
    int p;
    const char *why = address_problem(addr, &off, &len, &p);
    if (why) return tn_error(err, errlen, TN_EINVAL, "\"%s\" is not host:port: %s", addr, why);
    if (len + 1 > hostlen)
        return tn_error(err, errlen, TN_EINVAL, "the host of \"%s\" is longer than %zu bytes",
                        addr, hostlen ? hostlen - 1 : 0);
    memcpy(host, addr + off, len);
    host[len] = '\0';
    *port = p;
    return 0;
}

/* ---------------------------------------------------------------------------------
 * Checks and helpers
 * --------------------------------------------------------------------------------- */

static int cluster_empty(const tf_config *c) {
    for (int t = 0; t < TF_NCLUSTER; t++)
        if (c->cluster[t].n) return 0;
    return 1;
}

int tf_config_check(const tf_config *c, char *err, size_t errlen) {
    for (int t = 0; t < TF_NCLUSTER; t++) {
        const tf_list *l = &c->cluster[t];
        for (size_t i = 0; i < l->n; i++) {
            size_t off, len;
            int port;
            const char *why = address_problem(l->addr[i], &off, &len, &port);
            if (why)
                return tn_error(err, errlen, TN_EINVAL,
                                "TF_CONFIG: cluster.%s[%zu]: \"%s\" is not host:port: %s",
                                tf_type_name(c, t), i, l->addr[i], why);
        }
    }
    /* one address a replica: two the same would have one replica meet itself */
    for (int t = 0; t < TF_NCLUSTER; t++)
        for (size_t i = 0; i < c->cluster[t].n; i++)
            for (int u = 0; u <= t; u++)
                for (size_t k = 0; k < (u == t ? i : c->cluster[u].n); k++)
                    if (!strcmp(c->cluster[t].addr[i], c->cluster[u].addr[k]))
                        return tn_error(err, errlen, TN_EINVAL,
                                        "TF_CONFIG: cluster.%s[%zu] \"%s\" is also "
                                        "cluster.%s[%zu]: every replica needs its own "
                                        "host:port",
                                        tf_type_name(c, t), i, c->cluster[t].addr[i],
                                        tf_type_name(c, u), k);
    if (c->cluster[TF_CHIEF].n > 1)
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: cluster.%s has %zu entries; a cluster has at most one %s",
                        tf_type_name(c, TF_CHIEF), c->cluster[TF_CHIEF].n,
                        tf_type_name(c, TF_CHIEF));
    if (c->type < 0 || c->type >= TF_NTYPES)
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.type %d is not a replica type",
                        c->type);
    if (c->cluster[TF_PS].n > 0 && c->cluster[TF_CHIEF].n + c->cluster[TF_WORKER].n == 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: the cluster has parameter servers but no %s or worker to "
                        "train: add a \"%s\" or \"worker\" list",
                        tf_type_name(c, TF_CHIEF), tf_type_name(c, TF_CHIEF));
    if (c->index < 0)
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.index %d is negative",
                        c->index);
    if (c->type == TF_EVALUATOR) return 0;
    const char *name = tf_type_name(c, c->type);
    size_t n = c->cluster[c->type].n;
    if (c->type == TF_CHIEF && cluster_empty(c)) {
        /* The single replica: no cluster at all. */
        if (c->index != 0)
            return tn_error(err, errlen, TN_EINVAL,
                            "TF_CONFIG: task.index %d is out of range: with an empty cluster "
                            "the only task is %s 0", c->index, name);
        return 0;
    }
    if (n == 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: task.type is \"%s\" but the cluster has no \"%s\" list",
                        name, name);
    if ((size_t)c->index >= n)
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: task.index %d is out of range: cluster.%s has %zu "
                        "entr%s", c->index, name, n, n == 1 ? "y" : "ies");
    return 0;
}

const char *tf_chief_address(const tf_config *c) {
    if (c->cluster[TF_CHIEF].n) return c->cluster[TF_CHIEF].addr[0];
    if (c->cluster[TF_WORKER].n) return c->cluster[TF_WORKER].addr[0];
    return NULL;
}

int tf_is_chief(const tf_config *c) {
    if (c->type == TF_CHIEF) return 1;
    return c->type == TF_WORKER && c->index == 0 && c->cluster[TF_CHIEF].n == 0;
}

int tf_world_size(const tf_config *c) {
    if (cluster_empty(c)) return 1;
    return (int)(c->cluster[TF_CHIEF].n + c->cluster[TF_WORKER].n);
}

int tf_rank(const tf_config *c) {
    if (c->type == TF_CHIEF) return 0;
    if (c->type == TF_WORKER) return c->index + (int)c->cluster[TF_CHIEF].n;
    return -1;
}

/* ---------------------------------------------------------------------------------
 * Emit
 * --------------------------------------------------------------------------------- */

char *tf_config_emit(const tf_config *c) {
    json_t *root = json_object();
    json_t *cluster = json_object();
    for (int t = 0; t < TF_NCLUSTER; t++) {
        const tf_list *l = &c->cluster[t];
        if (!l->n) continue;
        json_t *arr = json_array();
        for (size_t i = 0; i < l->n; i++) json_array_append_new(arr, json_string(l->addr[i]));
        json_object_set_new(cluster, tf_type_name(c, t), arr);
    }
    json_object_set_new(root, "cluster", cluster);
    json_t *task = json_object();
    json_object_set_new(task, "type", json_string(tf_type_name(c, c->type)));
    json_object_set_new(task, "index", json_integer(c->index));
    if (c->trial) json_object_set_new(task, "trial", json_string(c->trial));
    json_object_set_new(root, "task", task);
    if (c->job) json_object_set(root, "job", c->job);
    json_object_set_new(root, "environment",
                        json_string(c->environment ? c->environment : "cloud"));
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) {
        /* jansson fails here only on out-of-memory or invalid UTF-8 in a string. */
        fprintf(stderr, "fatal: cannot encode TF_CONFIG (out of memory, or a string that "
                        "is not UTF-8)\n");
        abort();
    }
    return text;
}

/* ---------------------------------------------------------------------------------
 * Parse
 * --------------------------------------------------------------------------------- */


/* The "; did you mean \"NAME\"?" that ends an unknown name's message, formatted into
 * hint, or "" when none of the n names is near word. Returns hint. */
static const char *meant(const char *word, const char *const *names, size_t n, char *hint,
                         size_t len) {
    const char *near = tn_closest(word, names, n);
    if (near) snprintf(hint, len, "; did you mean \"%s\"?", near);
    else hint[0] = '\0';
    return hint;
}

/* The replica types' names in TF_CONFIG (tf_type_parse's), for the hints. */
static const char *const k_json_names[] = {"chief", "master", "worker", "ps", "evaluator"};

static int parse_cluster(json_t *cluster, tf_config *out, char *err, size_t errlen) {
    if (!json_is_object(cluster))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: cluster is not an object (found "
                        "%s)", tn_json_kind(cluster));
    if (json_object_get(cluster, "chief") && json_object_get(cluster, "master"))
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: cluster has both \"chief\" and \"master\"; \"master\" is "
                        "the legacy name of the chief, use one");
    const char *key;
    json_t *list;
    json_object_foreach(cluster, key, list) {
        int type = tf_type_parse(key);
        if (type == TF_EVALUATOR)
            return tn_error(err, errlen, TN_EINVAL,
                            "TF_CONFIG: cluster.evaluator: the evaluator is never listed in "
                            "the cluster");
        if (type < 0) {
            char hint[64];
            return tn_error(err, errlen, TN_EINVAL,
                            "TF_CONFIG: cluster.%s is not a replica type (expected chief, "
                            "master, worker or ps%s)",
                            key, meant(key, k_json_names, 4, hint, sizeof hint));
        }
        if (!strcmp(key, "master")) out->master = 1;
        if (!json_is_array(list))
            return tn_error(err, errlen, TN_EINVAL,
                            "TF_CONFIG: cluster.%s is not an array of \"host:port\" strings "
                            "(found %s)", key, tn_json_kind(list));
        size_t i;
        json_t *addr;
        json_array_foreach(list, i, addr) {
            if (!json_is_string(addr))
                return tn_error(err, errlen, TN_EINVAL,
                                "TF_CONFIG: cluster.%s[%zu] is not a \"host:port\" string "
                                "(found %s)", key, i, tn_json_kind(addr));
            tf_config_add(out, type, json_string_value(addr));
        }
    }
    return 0;
}

static int parse_task(json_t *task, const json_t *cluster, tf_config *out, char *err,
                      size_t errlen) {
    if (!task || json_is_null(task))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task is missing");
    if (!json_is_object(task))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task is not an object (found %s)",
                        tn_json_kind(task));

    json_t *type = json_object_get(task, "type");
    if (!type || json_is_null(type))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.type is missing");
    if (!json_is_string(type))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.type is not a string (found "
                        "%s)", tn_json_kind(type));
    const char *ts = json_string_value(type);
    int has_chief_key = cluster && json_object_get(cluster, "chief") != NULL;
    int has_master_key = cluster && json_object_get(cluster, "master") != NULL;
    int t = tf_type_parse(ts), master = !strcmp(ts, "master");
    if (t < 0) {
        char hint[64];
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: task.type \"%s\" is not a replica type (expected chief, "
                        "master, worker, ps or evaluator%s)",
                        ts, meant(ts, k_json_names, 5, hint, sizeof hint));
    }
    if (t == TF_CHIEF && (master ? has_chief_key : has_master_key))
        return tn_error(err, errlen, TN_EINVAL,
                        "TF_CONFIG: task.type is \"%s\" but the cluster calls the chief \"%s\"",
                        ts, master ? "chief" : "master");
    out->type = t;
    if (master) out->master = 1;

    json_t *index = json_object_get(task, "index");
    if (!index || json_is_null(index))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.index is missing");
    if (!json_is_integer(index))
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.index is not an integer "
                        "(found %s)", tn_json_kind(index));
    json_int_t iv = json_integer_value(index);
    if (iv < 0)
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.index %" JSON_INTEGER_FORMAT
                        " is negative", iv);
    if (iv > INT_MAX)
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.index %" JSON_INTEGER_FORMAT
                        " is too large", iv);
    out->index = (int)iv;

    json_t *trial = json_object_get(task, "trial");
    if (trial && !json_is_null(trial)) {
        if (!json_is_string(trial))
            return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: task.trial is not a string "
                            "(found %s)", tn_json_kind(trial));
        out->trial = tn_xstrdup(json_string_value(trial));
    }
    return 0;
}

int tf_config_parse(const char *json, tf_config *out, char *err, size_t errlen) {
    tf_config_init(out);
    json_error_t jerr;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
    int rc = 0;
    if (!root)
        return tn_error(err, errlen, TN_EINVAL, "TF_CONFIG is not JSON: %s (line %d, column "
                        "%d)", jerr.text, jerr.line, jerr.column);
    if (!json_is_object(root)) {
        rc = tn_error(err, errlen, TN_EINVAL, "TF_CONFIG is not a JSON object (found %s)",
                      tn_json_kind(root));
        goto err;
    }
    json_t *cluster = json_object_get(root, "cluster");
    if (json_is_null(cluster)) cluster = NULL;
    if (cluster && (rc = parse_cluster(cluster, out, err, errlen))) goto err;
    if ((rc = parse_task(json_object_get(root, "task"), cluster, out, err, errlen))) goto err;

    json_t *job = json_object_get(root, "job");
    if (job && !json_is_null(job)) {
        if (!json_is_object(job)) {
            rc = tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: job is not an object (found %s)",
                          tn_json_kind(job));
            goto err;
        }
        tf_config_set_job(out, job);
    }
    json_t *env = json_object_get(root, "environment");
    if (env && !json_is_null(env)) {
        if (!json_is_string(env)) {
            rc = tn_error(err, errlen, TN_EINVAL, "TF_CONFIG: environment is not a string "
                          "(found %s)", tn_json_kind(env));
            goto err;
        }
        out->environment = tn_xstrdup(json_string_value(env));
    }
    if ((rc = tf_config_check(out, err, errlen))) goto err;
    json_decref(root);
    return 0;
err:
    json_decref(root);
    tf_config_clear(out);
    return rc;
}

int tf_config_from_env(tf_config *out, char *err, size_t errlen) {
    const char *text = getenv("TF_CONFIG");
    if (!text || !*text) {
        tf_config_init(out);
        return 0;
    }
    return tf_config_parse(text, out, err, errlen);
}

/* ---- ports for a cluster on one host ---- */

int tf_ephemeral_port_low(void) {
    int lo = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    if (f) {
        if (fscanf(f, "%d", &lo) != 1) lo = 0;
        fclose(f);
    }
    return lo > 0 && lo <= 65535 ? lo : 32768;
}

int tf_pick_local_ports(int n, int *ports, char *err, size_t errlen) {
    int *fds = tn_xcalloc((size_t)n + 1, sizeof *fds);
    int rc = 0, i, room = tf_ephemeral_port_low() - TF_PORTS_LOWEST;
    tn_rng rng;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    tn_rng_seed(&rng, tn_mix64((uint64_t)getpid() << 32 ^ (uint64_t)now.tv_nsec ^
                               (uint64_t)now.tv_sec << 20));
    for (i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int bound = 0;
        for (int tries = 0; fds[i] >= 0 && !bound && room >= 1000 && tries < 100; tries++) {
            uint64_t pick = TF_PORTS_LOWEST + tn_rng_below(&rng, (uint64_t)room);
            a.sin_port = htons((uint16_t)pick);
            bound = bind(fds[i], (struct sockaddr *)&a, sizeof a) == 0;
        }
        if (!bound) a.sin_port = 0;
        socklen_t len = sizeof a;
        if (fds[i] < 0 || (!bound && bind(fds[i], (struct sockaddr *)&a, sizeof a) != 0) ||
            getsockname(fds[i], (struct sockaddr *)&a, &len) != 0) {
            rc = tn_error(err, errlen, TN_EIO,
                          "cannot pick a free port on 127.0.0.1: %s; hint: check the limit on "
                          "open files (ulimit -n) and that loopback is up",
                          strerror(errno));
            if (fds[i] >= 0) close(fds[i]);
            break;
        }
        ports[i] = ntohs(a.sin_port);
    }
    while (i-- > 0) close(fds[i]);
    free(fds);
    return rc;
}
