/*
 * model_cache.c - the per-backend cache of loaded models, the check that a
 * model's files are still the ones loaded, and the SIGBUS guard.
 *
 * A backend loads a model the first time a function names it and keeps it
 * (model, one session, one encoding) for the backend's life, so a query
 * over a million rows loads it once.  The weights are mmapped read-only
 * (libbert), so every backend using the same model shares the same page
 * cache pages; what each backend owns is the tokenizer's tables and the
 * session's activation arena.
 *
 * Before each use the files' identities (device, inode, size, mtime) are
 * compared with those seen at load time; a difference means the model was
 * replaced or rewritten, and it is loaded again (or the load's error is
 * raised).  Checking before use is what keeps a truncated model.safetensors
 * from being read through the old mapping (SIGBUS); the guard catches the
 * remaining case, a file changed during a call.
 */
#include "bert_pg.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "miscadmin.h"
#include "utils/builtins.h"

/* At most this many models stay loaded per backend (least recently used
 * goes first). */
#define MAX_CACHED 8

/* The files whose identity is checked, in the order of bert_pg_file_id[]. */
static const char *const watched[BERT_PG_N_FILES] = {
    "config.json", "model.safetensors", "tokenizer.json", "vocab.txt",
    "tokenizer_config.json"};

static bert_pg_model *cache; /* most recently used first */

/* ---- file identity ------------------------------------------------------ */

static void file_ids(const char *dir, bert_pg_file_id *ids)
{
    char path[MAXPGPATH];
    struct stat st;
    for (int i = 0; i < BERT_PG_N_FILES; i++) {
        memset(&ids[i], 0, sizeof ids[i]);
        snprintf(path, sizeof path, "%s/%s", dir, watched[i]);
        if (stat(path, &st) != 0)
            continue;
        ids[i].present = 1;
        ids[i].dev = st.st_dev;
        ids[i].ino = st.st_ino;
        ids[i].size = st.st_size;
        ids[i].mtime = st.st_mtim;
    }
}

static bool file_ids_equal(const bert_pg_file_id *a, const bert_pg_file_id *b)
{
    for (int i = 0; i < BERT_PG_N_FILES; i++)
        if (a[i].present != b[i].present ||
            (a[i].present &&
             (a[i].dev != b[i].dev || a[i].ino != b[i].ino ||
              a[i].size != b[i].size ||
              a[i].mtime.tv_sec != b[i].mtime.tv_sec ||
              a[i].mtime.tv_nsec != b[i].mtime.tv_nsec)))
            return false;
    return true;
}

/* ---- entries ------------------------------------------------------------- */

static void entry_free(bert_pg_model *pm)
{
    if (!pm)
        return;
    bert_tag_result_free(pm->tag);
    bert_encoding_free(pm->enc);
    bert_session_free(pm->s);
    bert_model_free(pm->m);
    free(pm->dir);
    free(pm);
}

static void unlink_entry(bert_pg_model *pm)
{
    for (bert_pg_model **p = &cache; *p; p = &(*p)->next)
        if (*p == pm) {
            *p = pm->next;
            pm->next = NULL;
            return;
        }
}

void bert_pg_model_drop(bert_pg_model *pm)
{
    unlink_entry(pm);
    entry_free(pm);
}

/* Resolves `name` into dir (MAXPGPATH): an absolute path is used as given
 * (without trailing slashes), a plain name ([A-Za-z0-9_.-], not starting
 * with '.') is looked up in bert.model_dir. */
static void resolve(const char *name, char *dir, const char *fn)
{
    size_t n = strlen(name);
    if (n == 0)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("%s: empty model name", fn),
                 errhint("Pass a model directory (an absolute path) or the "
                         "name of an installed model such as 'sentiment' or "
                         "'ner'.")));
    if (name[0] == '/') {
        if (n >= MAXPGPATH)
            ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG),
                            errmsg("%s: model path is too long", fn)));
        memcpy(dir, name, n + 1);
        while (n > 1 && dir[n - 1] == '/')
            dir[--n] = '\0';
        return;
    }
    bool ok = name[0] != '.';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') ||
             (name[i] >= 'A' && name[i] <= 'Z') ||
             (name[i] >= '0' && name[i] <= '9') || name[i] == '_' ||
             name[i] == '-' || name[i] == '.';
    if (!ok)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("%s: \"%s\" is neither an absolute model directory "
                        "nor a model name",
                        fn, name),
                 errhint("Model names are letters, digits, '_', '-' and '.' "
                         "and are looked up in bert.model_dir (\"%s\"); "
                         "other models are given by absolute path.",
                         bert_pg_model_dir)));
    if (snprintf(dir, MAXPGPATH, "%s/%s", bert_pg_model_dir, name) >=
        MAXPGPATH)
        ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG),
                        errmsg("%s: model path is too long", fn)));
}

static const char *task_name(bert_task t)
{
    return t == BERT_TASK_SEQUENCE ? "sequence-classification"
           : t == BERT_TASK_TOKEN  ? "token-classification"
                                   : "base (no classification head)";
}

/* Loads dir into a new entry.  Raises the SQL error on failure (after
 * freeing whatever was loaded). */
static bert_pg_model *entry_load(const char *dir, const char *name,
                                 const char *fn)
{
    bert_pg_model *pm = calloc(1, sizeof *pm);
    if (!pm || !(pm->dir = strdup(dir))) {
        free(pm);
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
                        errmsg("%s: out of memory", fn)));
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        int e = errno;
        entry_free(pm);
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_FILE),
                 errmsg("%s: model \"%s\" not found: %s: %s", fn, name, dir,
                        e == 0 ? "not a directory" : strerror(e)),
                 name[0] == '/'
                     ? errhint("Give the directory of a Hugging Face model "
                               "(config.json, model.safetensors, vocab.txt), "
                               "readable by the server's operating-system "
                               "user.")
                     : errhint("Installed models are looked up in "
                               "bert.model_dir (\"%s\"); set it, or give an "
                               "absolute model directory.",
                               bert_pg_model_dir)));
    }
    file_ids(dir, pm->files);
    bert_error err;
    memset(&err, 0, sizeof err);
    bert_model_params mp = bert_model_default_params();
    mp.kernels = (bert_kernels)bert_pg_kernels;
    mp.precision = (bert_precision)bert_pg_precision;
    /* Packed weights shared by every backend through a cache file (libbert
     * falls back to private memory if the directory cannot be used). */
    char cache[MAXPGPATH];
    if (!bert_pg_pack_cache || !*bert_pg_pack_cache) {
        snprintf(cache, sizeof cache, "%s/bert_pack_cache", DataDir);
        if (mkdir(cache, 0700) == 0 || errno == EEXIST)
            mp.pack_cache_dir = cache;
    } else if (strcmp(bert_pg_pack_cache, "none") != 0)
        mp.pack_cache_dir = bert_pg_pack_cache;
    int rc = bert_model_load(dir, &mp, &pm->m, &err);
    if (rc != BERT_OK) {
        entry_free(pm);
        ereport(ERROR,
                (errcode(rc == BERT_EMISSING ? ERRCODE_UNDEFINED_FILE
                         : rc == BERT_ENOMEM ? ERRCODE_OUT_OF_MEMORY
                         : rc == BERT_EUNSUPPORTED
                             ? ERRCODE_FEATURE_NOT_SUPPORTED
                             : ERRCODE_DATA_CORRUPTED),
                 errmsg("%s: cannot load model \"%s\": %s", fn, name,
                        err.text[0] ? err.text : bert_strerror(rc)),
                 errhint("The directory must hold a BERT or DistilBERT model "
                         "as Hugging Face's save_pretrained() writes it "
                         "(config.json, model.safetensors and vocab.txt or "
                         "tokenizer.json).")));
    }
    bert_session_params sp = bert_session_default_params();
    sp.n_threads = bert_pg_threads;
    sp.kernels = (bert_kernels)bert_pg_kernels;
    rc = bert_session_create(pm->m, &sp, &pm->s, &err);
    if (rc == BERT_OK && (!(pm->enc = bert_encoding_create()) ||
                          !(pm->tag = bert_tag_result_create())))
        rc = BERT_ENOMEM;
    if (rc != BERT_OK) {
        entry_free(pm);
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
                        errmsg("%s: cannot create a session for model "
                               "\"%s\": %s",
                               fn, name, bert_strerror(rc))));
    }
    if (!bert_model_tokenizer(pm->m)) {
        entry_free(pm);
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("%s: model \"%s\" has no tokenizer", fn, name)));
    }
    /* a file replaced during the load: the model may mix old and new */
    bert_pg_file_id after[BERT_PG_N_FILES];
    file_ids(dir, after);
    if (!file_ids_equal(pm->files, after)) {
        entry_free(pm);
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_IN_USE),
                 errmsg("%s: the files of model \"%s\" changed while it was "
                        "being loaded",
                        fn, name),
                 errhint("Retry once the model directory is complete.")));
    }
    pm->threads = bert_pg_threads;
    pm->n_labels = bert_model_config(pm->m)->num_labels;
    pm->max_len = bert_model_max_length(pm->m);
    return pm;
}

bert_pg_model *bert_pg_model_get(const text *name_t, int task,
                                 const char *fn)
{
    char *name = text_to_cstring(name_t);
    char dir[MAXPGPATH];
    resolve(name, dir, fn);

    bert_pg_model *pm = NULL;
    for (bert_pg_model *p = cache; p; p = p->next)
        if (strcmp(p->dir, dir) == 0) {
            pm = p;
            break;
        }
    if (pm && bert_pg_check_files) {
        bert_pg_file_id now[BERT_PG_N_FILES];
        file_ids(dir, now);
        if (!file_ids_equal(pm->files, now)) {
            ereport(DEBUG1, (errmsg("%s: model \"%s\" changed on disk; "
                                    "loading it again",
                                    fn, name)));
            bert_pg_model_drop(pm);
            pm = NULL;
        }
    }
    if (pm)
        unlink_entry(pm);
    if (!pm) {
        size_t n = 0;
        for (bert_pg_model *p = cache; p; p = p->next)
            n++;
        if (n >= MAX_CACHED) { /* evict the least recently used */
            bert_pg_model *last = cache;
            while (last->next)
                last = last->next;
            bert_pg_model_drop(last);
        }
        pm = entry_load(dir, name, fn);
    }
    pm->next = cache; /* most recently used first */
    cache = pm;

    const bert_config *cfg = bert_model_config(pm->m);
    if (task != BERT_PG_ANY_TASK &&
        (cfg->task != (bert_task)task ||
         (task == BERT_TASK_SEQUENCE && !cfg->num_labels)))
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                 errmsg("%s: model \"%s\" is a %s model; %s needs a %s model",
                        fn, name, task_name(cfg->task), fn, task_name((bert_task)task)),
                 errhint(task == BERT_TASK_TOKEN
                             ? "bert_tag takes a token-classification (NER) "
                               "model such as 'ner'; sequence-classification "
                               "models go to bert_classify."
                             : "%s takes a sequence-classification model "
                               "such as 'sentiment'; token-classification "
                               "models go to bert_tag.",
                         fn)));
    if (pm->threads != bert_pg_threads) {
        bert_error err;
        int rc = bert_session_set_threads(pm->s, bert_pg_threads, &err);
        if (rc != BERT_OK)
            bert_pg_fail(rc, psprintf("bert.threads %d: %s", bert_pg_threads,
                                      err.text), fn);
        pm->threads = bert_pg_threads;
    }
    pfree(name);
    return pm;
}

/* ---- SIGBUS guard -------------------------------------------------------- */

sigjmp_buf bert_pg_guard_jmp;
volatile sig_atomic_t bert_pg_guard_armed;
static pthread_t guard_thread; /* the backend's own thread */
static struct sigaction prev_bus; /* what SIGBUS did before us */

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    if (bert_pg_guard_armed && pthread_equal(pthread_self(), guard_thread)) {
        bert_pg_guard_armed = 0;
        siglongjmp(bert_pg_guard_jmp, 1);
    }
    /* Not inside a guarded call (or on a BLIS/OpenMP worker thread, which
     * cannot jump to the backend's stack): back to the previous action
     * (normally the default: the process dies), which the faulting
     * instruction then triggers again. */
    sigaction(sig, &prev_bus, NULL);
}

void bert_pg_guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    guard_thread = pthread_self();
    sigaction(SIGBUS, &sa, &prev_bus);
}

void bert_pg_guard_fail(bert_pg_model *pm, const char *fn)
{
    char dir[MAXPGPATH];
    strlcpy(dir, pm->dir, sizeof dir);
    bert_pg_model_drop(pm);
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_IN_USE),
             errmsg("%s: the weights of model %s became unreadable during "
                    "the call (model.safetensors truncated or rewritten in "
                    "place)",
                    fn, dir),
             errhint("Replace model files by renaming a complete new file "
                     "over the old one; the next call loads the model "
                     "again.")));
}
