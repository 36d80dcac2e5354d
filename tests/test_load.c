/* test_load.c - bert_model_load's progress and cancellation
 * (bert_model_params.progress):
 *  - the calls: first done = total = 0 (config read, weights mapped), then
 *    bytes of weights, done never going back, total fixed from the second
 *    call on, the last with done == total; with packing kernels total is
 *    the file's bytes plus the float32 bytes of the packed matrices, with
 *    BLIS the file's alone; through the pack cache the same;
 *  - a cancel at each call: BERT_ECANCELED, *out NULL, err says so, and
 *    nothing is left behind (the heap's bytes in use and the process's
 *    mappings as before the load), also after mapping the pack cache;
 *  - a model loaded after all that gives the logits of one never
 *    interrupted.
 * Model: the bert-seq-uncased fixture of $SHARED_DIR/fixtures (skips with
 * 77 when absent). */
#include <CUnit/Basic.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libbert/bert.h"

static char dir[4200];

/* What the callback saw, and the call at which it cancels (-1: never). */
typedef struct calls {
    size_t n, done[4096], total[4096];
    long cancel_at;
} calls;

static int record(size_t done, size_t total, void *data)
{
    calls *c = data;
    if (c->n < 4096) {
        c->done[c->n] = done;
        c->total[c->n] = total;
    }
    return (long)c->n++ == c->cancel_at;
}

/* ---- what the process holds ------------------------------------------------
 * The bytes the heap has handed out and not taken back, counted by
 * replacing the allocation functions for the whole process (libbert,
 * jansson, BLIS included) with glibc's own plus a count: mallinfo's
 * figures also count the free chunks glibc caches, so they cannot tell a
 * leak from a cache.  Under AddressSanitizer its leak checker does this
 * job at exit instead. */
#if defined(__SANITIZE_ADDRESS__)
#define COUNT_HEAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_HEAP 0
#endif
#endif
#ifndef COUNT_HEAP
#define COUNT_HEAP 1
#endif

#if COUNT_HEAP
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t el);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static size_t heap_live; /* bytes; updated atomically (OpenMP threads) */

static void *counted(void *p)
{
    if (p)
        __atomic_add_fetch(&heap_live, malloc_usable_size(p),
                           __ATOMIC_RELAXED);
    return p;
}

static void uncount(void *p)
{
    if (p)
        __atomic_sub_fetch(&heap_live, malloc_usable_size(p),
                           __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    return counted(__libc_malloc(n));
}

void *calloc(size_t n, size_t el)
{
    return counted(__libc_calloc(n, el));
}

void *realloc(void *p, size_t n)
{
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q || n == 0)
        __atomic_sub_fetch(&heap_live, old, __ATOMIC_RELAXED);
    return counted(q);
}

void free(void *p)
{
    uncount(p);
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    return counted(__libc_memalign(align, n));
}

void *aligned_alloc(size_t align, size_t n)
{
    return counted(__libc_memalign(align, n));
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = counted(__libc_memalign(align, n));
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
#endif

/* Heap bytes handed out (0 without the count) and the number of mappings
 * of the model's files and the pack cache (the library's only mmap calls:
 * safetensors.c, packed.c).  Only those: a sanitizer's or the C library's
 * own mappings come and go between loads. */
static void footprint(size_t *heap, size_t *maps)
{
#if COUNT_HEAP
    *heap = __atomic_load_n(&heap_live, __ATOMIC_RELAXED);
#else
    *heap = 0;
#endif
    *maps = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[8192];
    while (f && fgets(line, sizeof line, f))
        *maps += strstr(line, dir) != NULL ||
                 strstr(line, "/test_load_cache.") != NULL;
    if (f)
        fclose(f);
}

/* Loads with params mp and the recorder; the status. */
static int load(bert_model_params mp, calls *c, bert_model **m,
                bert_error *err)
{
    mp.progress = record;
    mp.progress_data = c;
    c->n = 0;
    return bert_model_load(dir, &mp, m, err);
}

/* The calls of one load that ran to its end, checked. */
static void check_calls(const calls *c, size_t want_total)
{
    CU_ASSERT_FATAL(c->n >= 2 && c->n < 4096);
    CU_ASSERT_EQUAL(c->done[0], 0);
    CU_ASSERT_EQUAL(c->total[0], 0);
    for (size_t i = 1; i < c->n; i++) {
        CU_ASSERT_EQUAL(c->total[i], want_total);
        CU_ASSERT(c->done[i] <= c->total[i]);
        if (i > 1)
            CU_ASSERT(c->done[i] >= c->done[i - 1]);
    }
    CU_ASSERT_EQUAL(c->done[c->n - 1], want_total);
}

/* A cancel at each of the n calls of loads with mp: BERT_ECANCELED, no
 * model, nothing left behind. */
static void cancel_each(bert_model_params mp, size_t n)
{
    calls *c = calloc(1, sizeof *c);
    size_t heap0, maps0, heap, maps;
    footprint(&heap0, &maps0);
    for (size_t k = 0; k < n; k++) {
        bert_model *m = (bert_model *)1;
        bert_error err;
        c->cancel_at = (long)k;
        CU_ASSERT_EQUAL(load(mp, c, &m, &err), BERT_ECANCELED);
        CU_ASSERT_PTR_NULL(m);
        CU_ASSERT_EQUAL(err.status, BERT_ECANCELED);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "canceled"));
        CU_ASSERT_EQUAL(c->n, k + 1); /* no call after the cancel */
        footprint(&heap, &maps);
        if (heap != heap0 || maps != maps0)
            printf("\n  cancel at call %zu: heap %zu -> %zu bytes, %zu -> "
                   "%zu mappings", k, heap0, heap, maps0, maps);
        CU_ASSERT_EQUAL(heap, heap0);
        CU_ASSERT_EQUAL(maps, maps0);
    }
    free(c);
}

/* Logits of one text with model m. */
static void logits(const bert_model *m, float out[2])
{
    bert_session *s;
    bert_error err;
    int label;
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &s, &err), BERT_OK);
    bert_classify_params p = bert_classify_default_params();
    CU_ASSERT_EQUAL(bert_classify_text_ex(s, "a gorgeous film", 15, NULL, 0,
                                          &p, out, NULL, 2, &label, NULL,
                                          &err),
                    BERT_OK);
    bert_session_free(s);
}

static void test_progress_and_cancel(void)
{
    char st_path[4300];
    struct stat st;
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    CU_ASSERT_EQUAL_FATAL(stat(st_path, &st), 0);
    size_t file = (size_t)st.st_size;
    calls *c = calloc(1, sizeof *c);
    bert_model *m;
    bert_error err;
    float want[2], got[2];

    /* BLIS: no packing, the file's bytes only */
    bert_model_params mp = bert_model_default_params();
    mp.kernels = BERT_KERNELS_BLIS;
    c->cancel_at = -1;
    CU_ASSERT_EQUAL_FATAL(load(mp, c, &m, &err), BERT_OK);
    check_calls(c, file);
    CU_ASSERT_EQUAL(c->n, 2);
    logits(m, want); /* also warms up what a first load sets up once */
    bert_model_free(m);
    cancel_each(mp, 2);

    if (!bert_kernels_supported(BERT_KERNELS_AVX2)) {
        printf("\n  no packing kernels on this CPU: packing not tested");
        free(c);
        return;
    }
    /* packing: plus the float32 bytes of every weight matrix, one call
     * each (BERT: 6 a layer, pooler, classifier) */
    mp = bert_model_default_params();
    CU_ASSERT_EQUAL_FATAL(load(mp, c, &m, &err), BERT_OK);
    const bert_config *cfg = bert_model_config(m);
    size_t H = cfg->hidden, I = cfg->intermediate, L = cfg->layers;
    size_t mats = 4 * H * H + 2 * H * I;
    size_t packed = (L * mats + H * H + cfg->num_labels * H) * sizeof(float);
    check_calls(c, file + packed);
    CU_ASSERT_EQUAL(c->n, 2 + 6 * L + 2);
    CU_ASSERT_EQUAL(bert_model_packed_bytes(m, NULL) > 0, 1);
    logits(m, got);
    for (int i = 0; i < 2; i++) /* tiers agree up to float rounding */
        CU_ASSERT(fabs((double)got[i] - (double)want[i]) < 1e-4);
    bert_model_free(m);
    size_t n_calls = c->n;
    cancel_each(mp, n_calls);
    /* after every cancel, a load gives what an uninterrupted one gave */
    float again[2];
    c->cancel_at = -1;
    CU_ASSERT_EQUAL_FATAL(load(mp, c, &m, &err), BERT_OK);
    logits(m, again);
    CU_ASSERT(memcmp(again, got, sizeof got) == 0);
    bert_model_free(m);

    /* the pack cache: written by the first load, mapped by the next, which
     * reports the packed bytes at once; a cancel after the mapping unmaps */
    char tmpl[] = "/tmp/test_load_cache.XXXXXX", cmd[200];
    char *cdir = mkdtemp(tmpl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cdir);
    mp.pack_cache_dir = cdir;
    CU_ASSERT_EQUAL_FATAL(load(mp, c, &m, &err), BERT_OK);
    bert_model_free(m);
    CU_ASSERT_EQUAL_FATAL(load(mp, c, &m, &err), BERT_OK);
    int shared = 0;
    bert_model_packed_bytes(m, &shared);
    CU_ASSERT_EQUAL(shared, 1);
    /* the count sees the mapped cache (so that its checks can fail) */
    size_t heap_in, maps_in;
    footprint(&heap_in, &maps_in);
    CU_ASSERT(maps_in >= 1);
    check_calls(c, file + packed);
    CU_ASSERT_EQUAL(c->n, 3);
    logits(m, again);
    CU_ASSERT(memcmp(again, got, sizeof got) == 0);
    bert_model_free(m);
    cancel_each(mp, 3);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cdir);
    CU_ASSERT_EQUAL(system(cmd), 0);
    free(c);
}

int main(void)
{
    const char *shared = getenv("SHARED_DIR");
    struct stat st;
    snprintf(dir, sizeof dir, "%s/fixtures/bert-seq-uncased",
             shared ? shared : "../shared");
    if (stat(dir, &st) != 0) {
        printf("SKIP: %s not found (set SHARED_DIR)\n", dir);
        return 77;
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("load", NULL, NULL);
    CU_add_test(su, "progress and cancel", test_progress_and_cancel);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
