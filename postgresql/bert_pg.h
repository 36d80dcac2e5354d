/*
 * bert_pg.h - what the files of the PostgreSQL extension share.
 *
 * Memory rule of the extension: libbert objects (models, sessions,
 * encodings, tag results) live in malloc'd memory owned by the per-backend
 * model cache (model_cache.c) and are never freed by an ereport; everything
 * allocated for one call (token buffers, logits, result tuples) is palloc'd
 * in the call's memory context, so an error or a cancel anywhere frees it.
 * libbert itself never longjmps; the only non-local exits are ereport and
 * CHECK_FOR_INTERRUPTS, which run between libbert calls, and the SIGBUS
 * guard (bert_pg_guard_*) around calls that read mapped weights.
 */
#ifndef BERT_PG_H
#define BERT_PG_H

#include "postgres.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <libbert/bert.h>

/* ---- GUCs (functions.c) ------------------------------------------------ */

extern int bert_pg_threads;          /* bert.threads */
extern int bert_pg_kernels;          /* bert.kernels (a bert_kernels) */
extern int bert_pg_precision;        /* bert.precision (a bert_precision) */
extern char *bert_pg_pack_cache;     /* bert.pack_cache_dir */
extern char *bert_pg_model_dir;      /* bert.model_dir */
extern int bert_pg_max_input_bytes;  /* bert.max_input_bytes */
extern int bert_pg_batch_size;       /* bert.batch_size */
extern bool bert_pg_check_files;     /* bert.check_files */

/* ---- the model cache (model_cache.c) ----------------------------------- */

/* Identity of one model file when it was loaded: a changed identity means
 * the file was replaced, rewritten or truncated since. */
typedef struct bert_pg_file_id {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} bert_pg_file_id;

#define BERT_PG_N_FILES 5

/* A loaded model with this backend's session on it. */
typedef struct bert_pg_model {
    struct bert_pg_model *next;
    char *dir;                  /* resolved directory (the cache key) */
    bert_model *m;
    bert_session *s;
    bert_encoding *enc;         /* tokenizer output, reused */
    bert_tag_result *tag;       /* bert_tag output, reused */
    int threads;                /* the session's thread count */
    size_t n_labels, max_len;
    bert_pg_file_id files[BERT_PG_N_FILES];
} bert_pg_model;

/* Returns the model `name` (a default model name or an absolute directory)
 * loaded and ready for `task` (BERT_TASK_SEQUENCE, BERT_TASK_TOKEN or
 * BERT_PG_ANY_TASK;
 * `fn` names the SQL function in messages).  Loads it on first use and
 * reloads it when one of its files changed since; applies bert.threads.
 * Raises an SQL error (no crash, nothing leaked) for a bad name, a missing
 * or broken model, or a model of the wrong kind.  The result is borrowed:
 * valid until the next bert_pg_model_get or bert_pg_model_drop. */
#define BERT_PG_ANY_TASK (-1)
bert_pg_model *bert_pg_model_get(const text *name, int task, const char *fn);

/* Frees the model and removes it from the cache (after a SIGBUS in its
 * weights: its mapping is not to be trusted any more). */
void bert_pg_model_drop(bert_pg_model *pm);

/* ---- SIGBUS guard (model_cache.c) ---------------------------------------
 * The weights are mmapped: if model.safetensors is truncated while a call
 * reads it, the read raises SIGBUS, which would kill the backend (and make
 * the postmaster restart every session).  The cache checks the files'
 * identity before each use, so this only covers a file changed during a
 * call.  Usage, in a function of its own (no local variable of the caller
 * is then live across the jump):
 *
 *     bert_pg_guard_arm(pm);
 *     if (sigsetjmp(bert_pg_guard_jmp, 1) != 0)
 *         bert_pg_guard_fail(pm, fn);      (the call died of SIGBUS)
 *     rc = ...libbert calls, no ereport...;
 *     bert_pg_guard_leave();
 *
 * sigsetjmp must be called by the function whose frame stays valid, hence
 * no wrapper function.  The guard is armed only when pm's session runs on
 * one thread: jumping out of an OpenMP parallel region would leave the
 * thread team broken, so with bert.threads > 1 a SIGBUS stays fatal. */
extern sigjmp_buf bert_pg_guard_jmp;
extern volatile sig_atomic_t bert_pg_guard_armed;

#define bert_pg_guard_arm(pm) (bert_pg_guard_armed = (pm)->threads == 1)
#define bert_pg_guard_leave() (bert_pg_guard_armed = 0)

/* Drops pm and raises the "changed during use" error. */
pg_attribute_noreturn() void bert_pg_guard_fail(bert_pg_model *pm,
                                                const char *fn);

/* Installs the SIGBUS handler (from _PG_init). */
void bert_pg_guard_install(void);

/* ---- helpers (functions.c) --------------------------------------------- */

/* The UTF-8 bytes of t (converted from the database encoding if needed),
 * checked against bert.max_input_bytes.  *len receives the length. */
const char *bert_pg_text_utf8(const text *t, size_t *len, const char *fn);

/* Raises the SQL error of a failed libbert call: "FN: MSG" (MSG empty:
 * the status's text), with the SQLSTATE the status maps to (invalid UTF-8,
 * out of memory, invalid parameter, else external routine exception). */
pg_attribute_noreturn() void bert_pg_fail(int rc, const char *msg,
                                          const char *fn);

/* ---- batched classification (batch.c) ---------------------------------- */

/* Classifies n texts (NULL entries give label -1) into labels[n] and
 * scores[n] (score of the label), as bert-classify does: texts tokenized
 * and truncated to the model's length, length-sorted windows, packed
 * batches of up to bert.batch_size rows.  Interrupts are checked between
 * batches. */
void bert_pg_classify_many(bert_pg_model *pm, const char *const *texts,
                           const size_t *lens, size_t n, int *labels,
                           float *scores, const char *fn);

#endif
