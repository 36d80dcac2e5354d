/* packed.c - the model's weight matrices as the products see them: packed
 * once at load into the panels of libbert's kernels (gemm.h).
 *
 * Memory: the packed copy replaces the originals in memory rather than
 * adding to them.  F32 tensors are used from the read-only private mapping
 * of model.safetensors; once packed, their pages are handed back with
 * madvise(MADV_DONTNEED), which for a clean file mapping only drops them
 * from this process (a later read, by a session forced to the BLIS tier,
 * faults them in again from the page cache).  Embeddings, biases and
 * LayerNorm parameters stay mapped.
 *
 * Between processes the packed copy is private (anonymous memory): N
 * processes on one model hold N packed copies (BERT-base: 340 MB each)
 * but share nothing else they would not share anyway.  Servers that run
 * many processes on one model should load it with kernels = BLIS to share
 * the mapped file, or keep fewer processes with more threads each
 * (docs/performance.md). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libbert/model.h"

static void wmat(bert_wmat *m, const float *w, size_t n, size_t k)
{
    m->w = w;
    m->panels = NULL;
    m->n = w ? n : 0;
    m->k = w ? k : 0;
}

/* Gives the whole pages of [p, p + bytes) back to the kernel, when they lie
 * in the file mapping (never the converted buffer, which is malloc'd). */
static void release(const bert_model *m, const void *p, size_t bytes)
{
    const unsigned char *b = m->st.bytes, *q = p;
    if (!m->st.mapped || q < b || q + bytes > b + m->st.size)
        return;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return;
    uintptr_t lo = ((uintptr_t)q + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t hi = ((uintptr_t)q + bytes) & ~((uintptr_t)pg - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Matrix i of 6 L + 2: the layers' q k v o f1 f2, then pool and cls. */
static bert_wmat *mat_at(bert_mats *mm, size_t i)
{
    size_t L = mm->n_layers;
    if (i < 6 * L) {
        bert_layer_mats *y = &mm->layers[i / 6];
        bert_wmat *all[6] = {&y->q, &y->k, &y->v, &y->o, &y->f1, &y->f2};
        return all[i % 6];
    }
    return i == 6 * L ? &mm->pool : &mm->cls;
}

int bert__mats_build(bert_model *m, bert_kernels kernels, int n_threads)
{
    const bert_config *c = &m->cfg.pub;
    size_t L = c->layers, H = c->hidden, I = c->intermediate;
    bert_mats *mm = &m->mats;
    mm->layers = calloc(L ? L : 1, sizeof *mm->layers);
    if (!mm->layers)
        return BERT_ENOMEM;
    mm->n_layers = L;
    for (size_t l = 0; l < L; l++) {
        const bert_layer_w *w = &m->w.layers[l];
        bert_layer_mats *y = &mm->layers[l];
        wmat(&y->q, w->q_w, H, H);
        wmat(&y->k, w->k_w, H, H);
        wmat(&y->v, w->v_w, H, H);
        wmat(&y->o, w->o_w, H, H);
        wmat(&y->f1, w->f1_w, I, H);
        wmat(&y->f2, w->f2_w, H, I);
    }
    wmat(&mm->pool, m->w.pool_w, H, H);
    wmat(&mm->cls, m->w.cls_w, c->num_labels, H);

    if (kernels == BERT_KERNELS_AUTO)
        kernels = bert__kernels_best();
    if (kernels == BERT_KERNELS_BLIS || !bert__kernels_supported(kernels, NULL, 0))
        return BERT_OK;
    size_t nm = 6 * L + 2;
    for (size_t i = 0; i < nm; i++) {
        bert_wmat *x = mat_at(mm, i);
        if (!x->w)
            continue;
        if (bert__wmat_pack(x, n_threads) != BERT_OK) {
            bert__mats_free(mm);
            return BERT_ENOMEM;
        }
        mm->packed_bytes += bert__wmat_packed_bytes(x);
        release(m, x->w, x->n * x->k * sizeof(float));
    }
    mm->packed = 1;
    return BERT_OK;
}

void bert__mats_free(bert_mats *mm)
{
    if (mm->layers)
        for (size_t i = 0; i < 6 * mm->n_layers + 2; i++)
            bert__wmat_free(mat_at(mm, i));
    free(mm->layers);
    mm->layers = NULL;
}
