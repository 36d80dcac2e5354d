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
 * Between processes: by default the packed copy is private (anonymous
 * memory), so N processes on one model hold N packed copies (BERT-base:
 * 340 MB each).  With bert_model_params.pack_cache_dir the panels live in
 * a file of that directory, mapped read-only and shared (MAP_SHARED), so
 * every process that loads the same model file maps the same page-cache
 * pages: the first one packs and writes the file (temporary name, fsync,
 * rename, so a reader never sees half a file), the others only map it.
 * The file's name and header carry the model file's identity (device,
 * inode, size, modification time) and the panel layout, so a changed model
 * or a libbert with another layout never reads stale panels; a file that
 * does not match is ignored and replaced.  Any failure of the cache falls
 * back to private packing: the cache is never an error. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/model.h"

static void wmat(bert_wmat *m, const float *w, size_t n, size_t k,
                 bert_precision prec)
{
    m->w = w;
    m->panels = NULL;
    m->prec = prec;
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

/* ---- the cache file ------------------------------------------------------- */

#define CACHE_MAGIC "LBPACK01"
#define CACHE_DATA 4096 /* the panels start on a page */

typedef struct cache_header {
    char magic[8];
    uint64_t layout, n_mats, data_bytes;
    uint64_t dev, ino, size, mtime_ns; /* model.safetensors */
} cache_header;

/* Offset of each matrix's panels in the data: in mat_at order, 64-byte
 * aligned; returns the total. */
static size_t cache_offsets(bert_mats *mm, size_t nm, size_t *off)
{
    size_t total = 0;
    for (size_t i = 0; i < nm; i++) {
        bert_wmat *x = mat_at(mm, i);
        off[i] = total;
        if (x->w)
            total += (bert__wmat_size(x->n, x->k, x->prec) + 63) & ~(size_t)63;
    }
    return total;
}

static int cache_key(const char *st_path, size_t nm, size_t total,
                     bert_precision prec, cache_header *h)
{
    struct stat st;
    if (stat(st_path, &st) != 0)
        return -1;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CACHE_MAGIC, 8);
    h->layout = bert__wmat_layout(prec);
    h->n_mats = nm;
    h->data_bytes = total;
    h->dev = (uint64_t)st.st_dev;
    h->ino = (uint64_t)st.st_ino;
    h->size = (uint64_t)st.st_size;
    h->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
                  (uint64_t)st.st_mtim.tv_nsec;
    return 0;
}

/* DIR/<FNV-1a of the header>.lbpack */
static int cache_path(const char *dir, const cache_header *h, char *buf,
                      size_t n)
{
    uint64_t x = 14695981039346656037ull;
    const unsigned char *p = (const unsigned char *)h;
    for (size_t i = 0; i < sizeof *h; i++)
        x = (x ^ p[i]) * 1099511628211ull;
    int w = snprintf(buf, n, "%s/%016llx.lbpack", dir, (unsigned long long)x);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

/* Maps the cache file when it exists and matches h; points every matrix at
 * its panels.  0, or -1 (nothing changed). */
static int cache_map(bert_mats *mm, const char *path, const cache_header *h,
                     const size_t *off, size_t nm)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    struct stat st;
    cache_header fh;
    size_t want = CACHE_DATA + (size_t)h->data_bytes;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size != want ||
        pread(fd, &fh, sizeof fh, 0) != (ssize_t)sizeof fh ||
        memcmp(&fh, h, sizeof fh) != 0) {
        close(fd);
        return -1;
    }
    void *map = mmap(NULL, want, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    for (size_t i = 0; i < nm; i++) {
        bert_wmat *x = mat_at(mm, i);
        if (!x->w)
            continue;
        bert__wmat_free(x);
        x->panels = (float *)((char *)map + CACHE_DATA + off[i]);
    }
    mm->map = map;
    mm->map_size = want;
    return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes the packed panels to path (via a temporary file and rename).
 * 0, or -1 with nothing left behind. */
static int cache_write(bert_mats *mm, const char *dir, const char *path,
                       const cache_header *h, const size_t *off, size_t nm)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s/.lbpack-XXXXXX", dir) >= (int)sizeof tmp)
        return -1;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    static const char zero[64];
    char head[CACHE_DATA];
    memset(head, 0, sizeof head);
    memcpy(head, h, sizeof *h);
    int ok = write_all(fd, head, sizeof head) == 0;
    size_t at = 0;
    for (size_t i = 0; ok && i < nm; i++) {
        bert_wmat *x = mat_at(mm, i);
        if (!x->w)
            continue;
        ok = write_all(fd, zero, off[i] - at) == 0 &&
             write_all(fd, x->panels, bert__wmat_size(x->n, x->k, x->prec)) == 0;
        at = off[i] + bert__wmat_size(x->n, x->k, x->prec);
    }
    ok = ok && write_all(fd, zero, (size_t)h->data_bytes - at) == 0 &&
         fchmod(fd, 0644) == 0 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---- building ------------------------------------------------------------- */

int bert__mats_build(bert_model *m, bert_kernels kernels,
                     bert_precision prec, int n_threads,
                     const char *cache_dir, const char *st_path,
                     bert__progress *pr)
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
        wmat(&y->q, w->q_w, H, H, prec);
        wmat(&y->k, w->k_w, H, H, prec);
        wmat(&y->v, w->v_w, H, H, prec);
        wmat(&y->o, w->o_w, H, H, prec);
        wmat(&y->f1, w->f1_w, I, H, prec);
        wmat(&y->f2, w->f2_w, H, I, prec);
    }
    /* The pooler and classifier stay float32: a few outputs each, where
     * rounding would move the results most for the least time saved. */
    wmat(&mm->pool, m->w.pool_w, H, H, BERT_PRECISION_FP32);
    wmat(&mm->cls, m->w.cls_w, c->num_labels, H, BERT_PRECISION_FP32);
    mm->prec = prec;

    if (kernels == BERT_KERNELS_AUTO)
        kernels = bert__precision_tier(prec);
    int pack = kernels != BERT_KERNELS_BLIS &&
               bert__kernels_supported(kernels, NULL, 0);
    size_t nm = 6 * L + 2, bytes = 0;
    for (size_t i = 0; pack && i < nm; i++) {
        bert_wmat *x = mat_at(mm, i);
        bytes += x->w ? x->n * x->k * sizeof(float) : 0;
    }
    pr->total += bytes;
    if (bert__progress_add(pr, 0)) {
        bert__mats_free(mm);
        return BERT_ECANCELED;
    }
    if (!pack)
        return BERT_OK;
    size_t *off = NULL;
    cache_header h;
    char path[4300];
    int cache = cache_dir && st_path && (off = malloc(nm * sizeof *off)) &&
                cache_key(st_path, nm, cache_offsets(mm, nm, off), prec,
                          &h) == 0 &&
                cache_path(cache_dir, &h, path, sizeof path) == 0;
    if (cache && cache_map(mm, path, &h, off, nm) == 0) {
        for (size_t i = 0; i < nm; i++) {
            bert_wmat *x = mat_at(mm, i);
            if (!x->w)
                continue;
            mm->packed_bytes += bert__wmat_packed_bytes(x);
            release(m, x->w, x->n * x->k * sizeof(float));
        }
        mm->packed = 1;
        free(off);
        int rc = bert__progress_add(pr, bytes);
        if (rc != BERT_OK)
            bert__mats_free(mm);
        return rc;
    }
    for (size_t i = 0; i < nm; i++) {
        bert_wmat *x = mat_at(mm, i);
        if (!x->w)
            continue;
        int rc = bert__wmat_pack(x, n_threads);
        if (rc == BERT_OK) {
            mm->packed_bytes += bert__wmat_packed_bytes(x);
            release(m, x->w, x->n * x->k * sizeof(float));
            rc = bert__progress_add(pr, x->n * x->k * sizeof(float));
        }
        if (rc != BERT_OK) { /* out of memory, or canceled */
            free(off);
            bert__mats_free(mm);
            return rc;
        }
    }
    mm->packed = 1;
    /* Share what was packed: write the file, then map it in place of the
     * private copy (which cache_map frees).  Best effort. */
    if (cache && cache_write(mm, cache_dir, path, &h, off, nm) == 0)
        cache_map(mm, path, &h, off, nm);
    free(off);
    return BERT_OK;
}

void bert__mats_free(bert_mats *mm)
{
    if (mm->map) {
        munmap(mm->map, mm->map_size);
        mm->map = NULL;
    } else if (mm->layers)
        for (size_t i = 0; i < 6 * mm->n_layers + 2; i++)
            bert__wmat_free(mat_at(mm, i));
    free(mm->layers);
    mm->layers = NULL;
}
