/*
 * tfconfig.h — TF_CONFIG, the environment variable that tells a replica of a
 * distributed training job the cluster, its own role and its trial.
 *
 * The executor builds a tf_config for each replica and emits it; the trainer (or any
 * program written for AI Platform) parses it back. The shape is AI Platform's:
 *   {"cluster": {"chief": ["h:p"], "worker": ["h:p", ...], "ps": ["h:p", ...]},
 *    "task": {"type": "worker", "index": 0, "trial": "3"},
 *    "job": {...trainingInput...}, "environment": "cloud"}
 * The evaluator is never listed in the cluster. With useChiefInTfConfig false the
 * chief is called "master" (cluster key and task type), as legacy AI Platform did.
 * Parse errors name the field ("TF_CONFIG: cluster.worker[1]: ..."). Contract:
 * docs/design.md, "The trial-job contract"; what we accept and emit, and the
 * PyTorch-style WORLD_SIZE / RANK derived from it: docs/metrics.md.
 */
#ifndef TN_TFCONFIG_H
#define TN_TFCONFIG_H

#include <jansson.h>
#include <stddef.h>

/* Replica types, in replica order: the one enum of the spec, the executor and
 * TF_CONFIG (arrays of every type are indexed by it). The first TF_NCLUSTER are the
 * ones listed in the cluster. */
enum tf_type { TF_CHIEF = 0, TF_WORKER, TF_PS, TF_EVALUATOR, TF_NTYPES };
#define TF_NCLUSTER 3

/* The name of a type: "chief" (or "master" when master, AI Platform's legacy name),
 * "worker", "ps", "evaluator"; "?" for anything else. Static storage. */
const char *tf_type_label(int type, int master);
/* The type named name ("master" is the chief), or -1. */
int tf_type_parse(const char *name);

/* One cluster entry: the addresses of the replicas of a type, by index. */
typedef struct tf_list {
    char **addr; /* n "host:port" strings, owned by the tf_config */
    size_t n;
} tf_list;

typedef struct tf_config {
    tf_list cluster[TF_NCLUSTER]; /* indexed by TF_CHIEF, TF_WORKER, TF_PS; the chief
                                     list has 0 or 1 entry */
    int master;                   /* 1: the chief is called "master" (cluster key and
                                     task type), useChiefInTfConfig false */
    int type;                     /* task.type: enum tf_type */
    int index;                    /* task.index, >= 0 */
    char *trial;                  /* task.trial, or NULL (then not emitted) */
    json_t *job;                  /* "job": a reference owned by the struct, or NULL
                                     (then not emitted) */
    char *environment;            /* "environment"; NULL is emitted as "cloud" */
} tf_config;

/* Sets c to the single-replica default: empty cluster, task chief 0, no trial, no
 * job, environment NULL. Owns nothing, so clearing it is optional. */
void tf_config_init(tf_config *c);

/* Frees everything c owns and leaves it as tf_config_init does. */
void tf_config_clear(tf_config *c);

/* Appends a copy of addr ("host:port") to the cluster list of type (TF_CHIEF,
 * TF_WORKER or TF_PS). Not checked here: see tf_config_check. */
void tf_config_add(tf_config *c, int type, const char *addr);

/* Sets the task: type (enum tf_type), index, and a copy of trial (NULL: none). */
void tf_config_set_task(tf_config *c, int type, int index, const char *trial);

/* Sets "job" to job (NULL: none); c takes its own reference, yours is untouched. */
void tf_config_set_job(tf_config *c, json_t *job);

/* The name of a type as c spells it: "chief" (or "master" when c->master),
 * "worker", "ps", "evaluator"; "?" for anything else. Static storage. */
const char *tf_type_name(const tf_config *c, int type);

/* Checks what the JSON shape cannot: every address is host:port (host non-empty,
 * IPv6 in brackets, port 1..65535), at most one chief, parameter servers only with a
 * chief or a worker to serve (else no one trains), the task index is within its
 * type's list (the evaluator has none; a chief with an empty cluster is the single
 * replica, index 0). Returns 0 or TN_EINVAL with a message naming the field. */
int tf_config_check(const tf_config *c, char *err, size_t errlen);

/* The compact JSON text of c, keys in the order shown above; empty cluster lists
 * are left out (as AI Platform leaves out absent types), and so are a NULL trial and
 * a NULL job. Returns a string that is yours to free with free(). */
char *tf_config_emit(const tf_config *c);

/* Parses TF_CONFIG text into *out (which need not be initialised; on success it is
 * yours to tf_config_clear). Unknown top-level keys are ignored, as TensorFlow
 * does; everything else is checked, then tf_config_check runs. Returns 0, or
 * TN_EINVAL with a message naming the field ("TF_CONFIG: task.index is missing"),
 * *out then left as tf_config_init does. */
int tf_config_parse(const char *json, tf_config *out, char *err, size_t errlen);

/* Parses $TF_CONFIG. Returns 0 with what it says, or with the single-replica default
 * (tf_config_init: tf_world_size 1, no ps) when the variable is unset or empty; or
 * TN_EINVAL as tf_config_parse does. */
int tf_config_from_env(tf_config *out, char *err, size_t errlen);

/* The address of the chief: the chief's entry, or worker 0's when the cluster has
 * no chief (TensorFlow's rule); NULL when neither exists. Owned by c. */
const char *tf_chief_address(const tf_config *c);

/* Whether this task is the chief: type chief (or master), or worker 0 when the
 * cluster has no chief. */
int tf_is_chief(const tf_config *c);

/* PyTorch's WORLD_SIZE: chief + workers, or 1 for the single-replica default (empty
 * cluster). ps and evaluator are not part of the world. */
int tf_world_size(const tf_config *c);

/* PyTorch's RANK: chief 0, worker i -> i + 1 (i when the cluster has no chief, so
 * that worker 0, the acting chief, is rank 0); -1 for ps and evaluator. */
int tf_rank(const tf_config *c);

/* Splits "host:port" (IPv6 as "[addr]:port"): copies the host, brackets removed, into
 * host (hostlen bytes) and stores the port. For MASTER_ADDR and MASTER_PORT. Returns
 * 0, or TN_EINVAL with a message saying what is wrong (also when host is too small). */
int tf_split_address(const char *addr, char *host, size_t hostlen, int *port, char *err,
                     size_t errlen);

/* The lowest port of the kernel's range of ephemeral ports (the ports of their own
 * that outgoing connections get: /proc/sys/net/ipv4/ip_local_port_range), or 32768
 * where it does not say. */
int tf_ephemeral_port_low(void);

/* Picks n distinct free TCP ports on 127.0.0.1 for a cluster's replicas to listen on:
 * at random in [TF_PORTS_LOWEST, tf_ephemeral_port_low()), where no outgoing connection
 * (a replica connecting to a peer that has not bound its port yet, or any other
 * process's) can take one as its own before its replica binds it, as one could a port
 * the kernel chose. Each is bound until all are known, so they differ, then released.
 * Where that range leaves no room (under 1000 ports), or 100 random ports in a row are
 * taken, the kernel's choice. 0, or TN_EIO with the reason. */
#define TF_PORTS_LOWEST 10000
int tf_pick_local_ports(int n, int *ports, char *err, size_t errlen);

#endif
