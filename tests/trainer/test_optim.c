/*
 * test_optim.c — tests for trainer/optim.c: the learning-rate schedules (constant,
 * linear warm-up, cosine, step with an explicit period and the default thirds), the
 * range checks of opt_config_check, three updates of every optimiser on the CPU
 * backend against a double-precision reference written out here from the rules in
 * kernels/kernels.h, the state bookkeeping (buffer count, step counter), and
 * convergence of each optimiser on a 2-D quadratic.
 *
 * Notation: p parameters, g gradients, m / v first / second moment, lr learning rate,
 * mu momentum, wd weight decay, t the 1-based update number.
 */
#include "trainer/optim.h"

#include "common/status.h"
#include "kernels/kernels.h"
#include "tests/check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A valid configuration that each test changes. */
static opt_config base_config(int kind) {
    opt_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.learning_rate = 0.1;
    c.momentum = 0.9;
    c.weight_decay = 0.0;
    c.beta1 = 0.9;
    c.beta2 = 0.999;
    c.epsilon = 1e-8;
    c.schedule = OPT_CONSTANT;
    c.warmup_steps = 0;
    c.total_steps = 100;
    c.decay_rate = 0.5;
    c.decay_steps = 0;
    return c;
}

/* ---------------------------------------------------------------------------------
 * Schedules
 * --------------------------------------------------------------------------------- */

static void test_lr_constant(void) {
    opt_config c = base_config(OPT_SGD);
    const int64_t steps[] = {0, 1, 50, 99, 100, 1000000};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        CHECK_NEAR(opt_learning_rate(&c, steps[i]), 0.1, 0, 1e-15);
}

static void test_lr_warmup(void) {
    opt_config c = base_config(OPT_SGD);
    c.warmup_steps = 10;
    for (int64_t s = 0; s < 10; s++)
        CHECK_NEAR(opt_learning_rate(&c, s), 0.1 * (double)(s + 1) / 10.0, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 0), 0.01, 0, 1e-12); /* lr / warmup */
    CHECK_NEAR(opt_learning_rate(&c, 9), 0.1, 0, 1e-12);  /* lr at warmup - 1 */
    CHECK_NEAR(opt_learning_rate(&c, 10), 0.1, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 500), 0.1, 0, 1e-12);
    /* Warm-up also leads into the cosine and step schedules. */
    c.schedule = OPT_COSINE;
    c.total_steps = 110;
    CHECK_NEAR(opt_learning_rate(&c, 0), 0.01, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 9), 0.1, 0, 1e-12);
    c.schedule = OPT_STEP;
    CHECK_NEAR(opt_learning_rate(&c, 4), 0.05, 0, 1e-12);
    /* A single warm-up step is the full rate. */
    c.schedule = OPT_CONSTANT;
    c.warmup_steps = 1;
    CHECK_NEAR(opt_learning_rate(&c, 0), 0.1, 0, 1e-12);
}

static void test_lr_cosine(void) {
    opt_config c = base_config(OPT_SGD);
    c.schedule = OPT_COSINE;
    c.total_steps = 100;
    CHECK_NEAR(opt_learning_rate(&c, 0), 0.1, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 50), 0.05, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 25), 0.05 * (1.0 + cos(M_PI / 4.0)), 0, 1e-12);
    double end = opt_learning_rate(&c, 99);
    CHECK_MSG(end > 0.0 && end < 0.001, "lr at the last step %g", end);
    CHECK_NEAR(opt_learning_rate(&c, 100), 0.0, 1e-15, 0);
    CHECK_NEAR(opt_learning_rate(&c, 1000), 0.0, 1e-15, 0);
    /* Monotone non-increasing. */
    int monotone = 1;
    for (int64_t s = 1; s <= 110; s++)
        monotone &= opt_learning_rate(&c, s) <= opt_learning_rate(&c, s - 1);
    CHECK(monotone);

    /* After a warm-up the cosine runs over the remaining steps. */
    c.warmup_steps = 10;
    c.total_steps = 110;
    CHECK_NEAR(opt_learning_rate(&c, 10), 0.1, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 60), 0.05, 0, 1e-12);
    CHECK_NEAR(opt_learning_rate(&c, 110), 0.0, 1e-15, 0);
}

typedef struct lr_case {
    int64_t step;
    double lr;
} lr_case;

/* Checks the learning rate of c at each case's step, to 1e-12 of it. */
static void check_rates(const opt_config *c, const lr_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(fabs(opt_learning_rate(c, cases[i].step) - cases[i].lr) <= 1e-12 * cases[i].lr,
                  "step %lld: %g, expected %g", (long long)cases[i].step,
                  opt_learning_rate(c, cases[i].step), cases[i].lr);
}

static void test_lr_step(void) {
    opt_config c = base_config(OPT_SGD);
    c.schedule = OPT_STEP;
    c.decay_rate = 0.5;
    c.decay_steps = 10;
    static const lr_case halving[] = {{0, 0.1},    {9, 0.1},    {10, 0.05},   {19, 0.05},
                                      {20, 0.025}, {25, 0.025}, {30, 0.0125}, {99, 0.1 / 512}};
    check_rates(&c, halving, sizeof halving / sizeof halving[0]);

    /* decay_steps 0: three equal stages over the steps after warm-up. */
    c.decay_steps = 0;
    c.decay_rate = 0.1;
    c.total_steps = 90;
    static const lr_case thirds[] = {{0, 0.1},   {29, 0.1},   {30, 0.01},
                                     {59, 0.01}, {60, 0.001}, {89, 0.001}};
    check_rates(&c, thirds, sizeof thirds / sizeof thirds[0]);
    /* With a warm-up of 10 over 100 steps: stages of 30 after it. */
    c.warmup_steps = 10;
    c.total_steps = 100;
    static const lr_case warmed[] = {{10, 0.1}, {39, 0.1}, {40, 0.01}, {70, 0.001}};
    check_rates(&c, warmed, sizeof warmed / sizeof warmed[0]);
    /* Not divisible by three: still three stages, the last no longer than the others. */
    c.warmup_steps = 0;
    c.total_steps = 100;
    int stages = 1;
    for (int64_t s = 1; s < 100; s++)
        stages += opt_learning_rate(&c, s) < opt_learning_rate(&c, s - 1);
    CHECK_INT_EQ(stages, 3);
}

/* ---------------------------------------------------------------------------------
 * Range checks
 * --------------------------------------------------------------------------------- */

static void test_config_check(void) {
    for (int kind = OPT_SGD; kind <= OPT_ADAMW; kind++) {
        opt_config c = base_config(kind);
        char err[256] = "";
        CHECK_MSG(opt_config_check(&c, err, sizeof err) == 0, "kind %d: %s", kind, err);
    }
    opt_config ok = base_config(OPT_ADAM);
    ok.momentum = 0.0;
    ok.beta1 = 0.0;
    ok.beta2 = 0.0;
    ok.schedule = OPT_STEP;
    ok.decay_rate = 1.0;
    CHECK_INT_EQ(opt_config_check(&ok, NULL, 0), 0);

    enum { LR, MOM, WD, B1, B2, EPS, SCHED, WARM, DRATE, DSTEPS, KIND };
    static const struct {
        int field;
        double value;
        const char *flag;
    } cases[] = {
        {LR, 0.0, "--learning_rate"},   {LR, -0.1, "--learning_rate"},
        {LR, NAN, "--learning_rate"},   {LR, INFINITY, "--learning_rate"},
        {MOM, 1.0, "--momentum"},       {MOM, -0.1, "--momentum"},
        {MOM, NAN, "--momentum"},       {WD, -1e-4, "--weight_decay"},
        {WD, NAN, "--weight_decay"},    {B1, 1.0, "--beta1"},
        {B1, -0.5, "--beta1"},          {B2, 1.0, "--beta2"},
        {EPS, 0.0, "--epsilon"},        {EPS, -1e-8, "--epsilon"},
        {SCHED, 0, "schedule"},         {SCHED, 4, "schedule"},
        {WARM, -1, "--warmup_steps"},   {DRATE, 0.0, "--lr_decay_rate"},
        {DRATE, 1.5, "--lr_decay_rate"}, {DSTEPS, -1, "--lr_decay_steps"},
        {KIND, 0, "optimizer"},         {KIND, 6, "optimizer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        opt_config c = base_config(OPT_ADAM);
        c.schedule = OPT_STEP; /* so that the decay rate is checked */
        switch (cases[i].field) {
        case LR: c.learning_rate = cases[i].value; break;
        case MOM: c.momentum = cases[i].value; break;
        case WD: c.weight_decay = cases[i].value; break;
        case B1: c.beta1 = cases[i].value; break;
        case B2: c.beta2 = cases[i].value; break;
        case EPS: c.epsilon = cases[i].value; break;
        case SCHED: c.schedule = (int)cases[i].value; break;
        case WARM: c.warmup_steps = (int64_t)cases[i].value; break;
        case DRATE: c.decay_rate = cases[i].value; break;
        case DSTEPS: c.decay_steps = (int64_t)cases[i].value; break;
        default: c.kind = (int)cases[i].value; break;
        }
        char err[256] = "";
        int rc = opt_config_check(&c, err, sizeof err);
        CHECK_MSG(rc == TN_EINVAL, "case %zu (%s = %g): rc %d", i, cases[i].flag,
                  cases[i].value, rc);
        CHECK_STR_CONTAINS(err, cases[i].flag);
        CHECK_INT_EQ(opt_config_check(&c, NULL, 0), TN_EINVAL);
    }
}

/* ---------------------------------------------------------------------------------
 * Updates against a double reference
 * --------------------------------------------------------------------------------- */

#define NP 5
#define NSTEPS 3

/* One update of the reference optimiser, in double, from kernels.h's rules. */
static void ref_step(const opt_config *c, int64_t t, double lr, double *p, const double *g,
                     double *m, double *v) {
    double mu = c->momentum, wd = c->weight_decay;
    for (int i = 0; i < NP; i++) {
        switch (c->kind) {
        case OPT_SGD:
            p[i] -= lr * (g[i] + wd * p[i]);
            break;
        case OPT_MOMENTUM:
            m[i] = mu * m[i] + g[i] + wd * p[i];
            p[i] -= lr * m[i];
            break;
        case OPT_NESTEROV: {
            double gi = g[i] + wd * p[i];
            m[i] = mu * m[i] + gi;
            p[i] -= lr * (gi + mu * m[i]);
            break;
        }
        default: {
            int decoupled = c->kind == OPT_ADAMW;
            double gi = g[i] + (decoupled ? 0.0 : wd * p[i]);
            m[i] = c->beta1 * m[i] + (1.0 - c->beta1) * gi;
            v[i] = c->beta2 * v[i] + (1.0 - c->beta2) * gi * gi;
            double mhat = m[i] / (1.0 - pow(c->beta1, (double)t));
            double vhat = v[i] / (1.0 - pow(c->beta2, (double)t));
            if (decoupled) p[i] -= lr * wd * p[i];
            p[i] -= lr * mhat / (sqrt(vhat) + c->epsilon);
            break;
        }
        }
    }
}

static const char *kind_name(int kind) {
    static const char *names[] = {"?", "sgd", "momentum", "nesterov", "adam", "adamw"};
    return kind >= OPT_SGD && kind <= OPT_ADAMW ? names[kind] : "?";
}

static void check_against_reference(opt_config c) {
    const kn_backend *k = kn_cpu();
    static const double p0[NP] = {1.0, -2.0, 0.5, 0.0, 3.0};
    static const double g[NSTEPS][NP] = {
        {0.5, -1.0, 2.0, 0.0, 0.1},
        {0.4, 0.3, -1.5, 0.2, -0.1},
        {-0.2, 0.8, 1.0, -0.3, 0.05},
    };
    double rp[NP], rm[NP] = {0}, rv[NP] = {0};
    float hp[NP], hg[NP];
    for (int i = 0; i < NP; i++) {
        rp[i] = p0[i];
        hp[i] = (float)p0[i];
    }
    float *dp = k->alloc(NP * sizeof(float)), *dg = k->alloc(NP * sizeof(float));
    k->upload(dp, hp, sizeof hp);
    opt_state *o = opt_new(&c, k, NP);
    CHECK(o->t == 0);
    for (int s = 0; s < NSTEPS; s++) {
        for (int i = 0; i < NP; i++) hg[i] = (float)g[s][i];
        k->upload(dg, hg, sizeof hg);
        double want_lr = opt_learning_rate(&c, s);
        double lr = opt_step(o, dp, dg);
        CHECK_MSG(lr == want_lr, "%s step %d: rate %g, expected %g", kind_name(c.kind), s, lr,
                  want_lr);
        CHECK_MSG(o->t == s + 1, "%s: t = %lld after %d steps", kind_name(c.kind),
                  (long long)o->t, s + 1);
        ref_step(&c, s + 1, want_lr, rp, g[s], rm, rv);
        k->download(hp, dp, sizeof hp);
        for (int i = 0; i < NP; i++)
            CHECK_MSG(fabs(hp[i] - rp[i]) <= 2e-6 + 1e-5 * fabs(rp[i]),
                      "%s wd=%g step %d p[%d] = %.9g, expected %.9g", kind_name(c.kind),
                      c.weight_decay, s, i, hp[i], rp[i]);
    }
    opt_free(o);
    k->free(dp);
    k->free(dg);
}

static void test_step_against_reference(void) {
    const int kinds[] = {OPT_SGD, OPT_MOMENTUM, OPT_NESTEROV, OPT_ADAM, OPT_ADAMW};
    const double wds[] = {0.0, 0.1};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        for (size_t j = 0; j < 2; j++) {
            opt_config c = base_config(kinds[i]);
            c.weight_decay = wds[j];
            c.warmup_steps = 2; /* rates 0.05, 0.1, 0.1: opt_step follows the schedule */
            check_against_reference(c);
        }
    }
}

/* The first Adam step moves every parameter with a non-zero gradient by about lr,
 * whatever the gradient's scale: a check independent of the reference above. */
static void test_adam_first_step_is_lr(void) {
    const kn_backend *k = kn_cpu();
    for (int kind = OPT_ADAM; kind <= OPT_ADAMW; kind++) {
        opt_config c = base_config(kind);
        c.learning_rate = 0.01;
        float hp[3] = {1.0f, 1.0f, 1.0f}, hg[3] = {1e-3f, -5.0f, 300.0f};
        float *dp = k->alloc(sizeof hp), *dg = k->alloc(sizeof hg);
        k->upload(dp, hp, sizeof hp);
        k->upload(dg, hg, sizeof hg);
        opt_state *o = opt_new(&c, k, 3);
        opt_step(o, dp, dg);
        k->download(hp, dp, sizeof hp);
        CHECK_NEAR(hp[0], 0.99, 1e-5, 0);
        CHECK_NEAR(hp[1], 1.01, 1e-5, 0);
        CHECK_NEAR(hp[2], 0.99, 1e-5, 0);
        opt_free(o);
        k->free(dp);
        k->free(dg);
    }
}

static void test_buffer_count_and_t(void) {
    const kn_backend *k = kn_cpu();
    const struct {
        int kind, buffers;
    } cases[] = {{OPT_SGD, 1}, {OPT_MOMENTUM, 1}, {OPT_NESTEROV, 1}, {OPT_ADAM, 2},
                 {OPT_ADAMW, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        opt_config c = base_config(cases[i].kind);
        opt_state *o = opt_new(&c, k, 4);
        CHECK_MSG(opt_buffer_count(o) == cases[i].buffers, "%s: %d buffers",
                  kind_name(cases[i].kind), opt_buffer_count(o));
        CHECK(o->m != NULL);
        CHECK((o->v != NULL) == (cases[i].buffers == 2));
        CHECK(o->n == 4);
        CHECK(o->t == 0);
        float *p = k->alloc(4 * sizeof(float)), *g = k->alloc(4 * sizeof(float));
        for (int s = 1; s <= 7; s++) {
            opt_step(o, p, g);
            CHECK(o->t == s);
        }
        /* Moments start at zero. */
        float m[4];
        k->download(m, o->m, sizeof m);
        for (int j = 0; j < 4; j++) CHECK(m[j] == 0.0f);
        opt_free(o);
        k->free(p);
        k->free(g);
    }
    opt_free(NULL);
}

/* ---------------------------------------------------------------------------------
 * Convergence: f(p) = sum a_i p_i^2, gradient 2 a_i p_i, minimum at 0
 * --------------------------------------------------------------------------------- */

static void test_quadratic_converges(void) {
    const kn_backend *k = kn_cpu();
    const double a[2] = {1.0, 10.0};
    const struct {
        int kind;
        double lr;
    } cases[] = {{OPT_SGD, 0.05},      {OPT_MOMENTUM, 0.01}, {OPT_NESTEROV, 0.01},
                 {OPT_ADAM, 0.05},     {OPT_ADAMW, 0.05}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        opt_config c = base_config(cases[i].kind);
        c.learning_rate = cases[i].lr;
        c.schedule = OPT_COSINE;
        c.total_steps = 500;
        if (c.kind == OPT_ADAMW) c.weight_decay = 0.01;
        float hp[2] = {1.0f, -1.0f}, hg[2];
        float *dp = k->alloc(sizeof hp), *dg = k->alloc(sizeof hg);
        k->upload(dp, hp, sizeof hp);
        opt_state *o = opt_new(&c, k, 2);
        double f0 = a[0] + a[1], f = f0;
        for (int s = 0; s < 500; s++) {
            k->download(hp, dp, sizeof hp);
            for (int j = 0; j < 2; j++) hg[j] = (float)(2.0 * a[j] * hp[j]);
            k->upload(dg, hg, sizeof hg);
            opt_step(o, dp, dg);
        }
        k->download(hp, dp, sizeof hp);
        f = a[0] * hp[0] * hp[0] + a[1] * hp[1] * hp[1];
        CHECK_MSG(f < 1e-4 * f0 && fabs(hp[0]) < 0.01 && fabs(hp[1]) < 0.01,
                  "%s: f = %g at (%g, %g)", kind_name(c.kind), f, hp[0], hp[1]);
        opt_free(o);
        k->free(dp);
        k->free(dg);
    }
}

int main(void) {
    RUN(test_lr_constant);
    RUN(test_lr_warmup);
    RUN(test_lr_cosine);
    RUN(test_lr_step);
    RUN(test_config_check);
    RUN(test_step_against_reference);
    RUN(test_adam_first_step_is_lr);
    RUN(test_buffer_count_and_t);
    RUN(test_quadratic_converges);
    return check_summary();
}
