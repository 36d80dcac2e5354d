/* tests/trainutil.h - what the trainer tests share (tests/test_train for
 * BERT, tests/test_train_distil for DistilBERT): random numbers, a scratch
 * directory for tiny configs, the whole-model gradient check, a tiny model
 * trained on a tiny task, and a fixture's batch with its expected logits. */
#ifndef LIBBERT_TESTS_TRAINUTIL_H
#define LIBBERT_TESTS_TRAINUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "libbert/train/trainer.h"

/* A uniform float in [-1, 1); advances the LCG state *s. */
float tr_frand(uint64_t *s);

/* Relative error |a - n| / (|a| + |n|), robust to tiny values: where
 * |a| + |n| < small the denominator is small_denom instead. */
double tr_relerr(double a, double n, double small, double small_denom);

/* The scratch directory of tr_run (/tmp/test_SUITE.XXXXXX). */
extern char tr_tmp[256];

typedef struct {
    const char *name;
    void (*fn)(void);
} tr_test;

/* main(): creates tr_tmp, runs TESTS (up to one with name NULL) as CUnit
 * suite SUITE in verbose mode, calls SUMMARY (may be NULL) to print the
 * worst errors, removes tr_tmp; returns the exit status (1: a failure). */
int tr_run(const char *suite, const tr_test *tests, void (*summary)(void));

/* Writes tr_tmp/NAME.json from a printf format; returns its path (a static
 * buffer, valid until the next call) or NULL. */
const char *tr_write_config(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* bert_trainer_create from directory DIR or config file CFG; asserts
 * success (fatal), printing the error first. */
bert_trainer *tr_trainer_create(const char *dir, const char *cfg,
                                const bert_train_params *p);

/* How the whole-model check differentiates numerically (float32 forward):
 * fourth_order 0: (f(x+h) - f(x-h)) / 2h; 1: [8(f(x+h) - f(x-h)) -
 * (f(x+2h) - f(x-2h))] / 12h.  Errors are tr_relerr(analytic, numeric,
 * small, small_denom). */
typedef struct {
    int fourth_order;
    float h;
    double small, small_denom;
} tr_fd;

/* The whole-model gradient check on a trainer of config file CFG for TASK
 * (3 labels, seed 5) whose parameters are perturbed to generic values, on a
 * fixed batch of 2 x 5 with token types TYPES[10] and the same dropout masks
 * in every forward: every parameter with a non-zero gradient and every 7th
 * of the rest; asserts the worst error < 3e-2 over more than 100 of them.
 * With ReLU, a parameter whose perturbed forwards flip the sign of a
 * pre-activation is skipped (a difference across the kink is no
 * derivative): they are counted, and must stay under a fifth.
 * RDROP: the trainer's R-Drop weight (0: off).
 * INSPECT (may be NULL) is called on the new trainer first.  The worst
 * error raises *WORST_SO_FAR where it is larger. */
void tr_model_gradcheck(const char *cfg, bert_train_task task,
                        const int32_t *types, float rdrop, const tr_fd *fd,
                        void (*inspect)(const bert_trainer *),
                        double *worst_so_far);

/* A tiny task: label = whether token 3 occurs in the sequence; 16
 * sequences of up to 6 tokens, 150 steps on a sequence classifier of config
 * file CFG.  WITH_TYPES: token types 1 past position 2 (else NULL).  Returns
 * the accuracy in percent (-1 on error); weights_out (may be NULL): a
 * malloc'd copy of the final weights and their count. */
int tr_train_tiny(const char *cfg, int with_types, uint64_t seed, int threads,
                  float **weights_out, size_t *n_out);

/* The tiny model trains to the same weights bit for bit, twice each on 1
 * and 2 threads. */
void tr_check_deterministic(const char *cfg, int with_types);

/* A fixture's batch and expected logits. */
typedef struct {
    char dir[1024];
    size_t B, T, C;
    int32_t *ids, *types;
    size_t *lens;
    float *expected; /* [B][C] */
} tr_fixture;

/* Reads $SHARED_DIR/fixtures/NAME's batch and logits; 0 when it is absent
 * (skipped, with a message) or unreadable (a failure). */
int tr_fixture_load(tr_fixture *fx, const char *name);
void tr_fixture_free(tr_fixture *fx);

/* The trainer's logits for the fixture's batch into got[B][C] (asserted);
 * returns max |got - expected|. */
double tr_fixture_predict(bert_trainer *t, const tr_fixture *fx, float *got);

/* Three steps of fine-tuning on the fixture's batch with LABELS (each step
 * asserted), then the new logits into got[rows][C] (asserted). */
void tr_fixture_finetune(bert_trainer *t, const tr_fixture *fx,
                         int32_t *labels, float *got);

/* Copies the fixture's tokenizer files into OUT (a saved trainer), loads
 * it by bert_model_load (asserting its architecture and task) and returns
 * max |diff| between bert_session_run's logits and the trainer's GOT
 * ([B][T][C] for the token task, [B][C] else). */
double tr_reload_by_inference(const tr_fixture *fx, const char *out,
                              bert_train_task task, int is_distilbert,
                              size_t C, const float *got);

#endif
