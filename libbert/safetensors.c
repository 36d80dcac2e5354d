/* safetensors.c - safetensors reader (mmap, strict validation) and writer. */
#include "libbert/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/internal.h"

/* ---- dtypes --------------------------------------------------------------- */

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [BERT_DT_F32] = {"F32", 4}, [BERT_DT_F16] = {"F16", 2},
    [BERT_DT_BF16] = {"BF16", 2}, [BERT_DT_F64] = {"F64", 8},
    [BERT_DT_I64] = {"I64", 8}, [BERT_DT_I32] = {"I32", 4},
    [BERT_DT_I16] = {"I16", 2}, [BERT_DT_I8] = {"I8", 1},
    [BERT_DT_U8] = {"U8", 1},   [BERT_DT_BOOL] = {"BOOL", 1},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

size_t bert__st_dtype_size(bert_dtype dt)
{
    return (unsigned)dt < N_DTYPES ? dtypes[dt].size : 0;
}

const char *bert__st_dtype_name(bert_dtype dt)
{
    return (unsigned)dt < N_DTYPES ? dtypes[dt].name : "?";
}

static int dtype_from_name(const char *s, bert_dtype *dt)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(s, dtypes[i].name) == 0) {
            *dt = (bert_dtype)i;
            return 0;
        }
    return -1;
}

/* ---- parsing -------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const bert_st_tensor *)a)->name,
                  ((const bert_st_tensor *)b)->name);
}

static int cmp_offset(const void *a, const void *b)
{
    const unsigned char *x = ((const bert_st_tensor *const *)a)[0]->data;
    const unsigned char *y = ((const bert_st_tensor *const *)b)[0]->data;
    return x < y ? -1 : x > y;
}

/* Reads a JSON integer >= 0 into *v; -1 when not one. */
static int json_size(const json_t *j, size_t *v)
{
    if (!json_is_integer(j))
        return -1;
    json_int_t x = json_integer_value(j);
    if (x < 0 || (unsigned long long)x > (unsigned long long)SIZE_MAX)
        return -1;
    *v = (size_t)x;
    return 0;
}

int bert__st_parse(const void *buf, size_t size, const char *label,
                   bert_st_file *out, bert_error *err)
{
    const unsigned char *b = buf;
    json_t *root = NULL;
    bert_st_tensor **byoff = NULL;
    bert_st_file f;
    int rc = BERT_OK;

    memset(&f, 0, sizeof f);
    memset(out, 0, sizeof *out);
    if (!label)
        label = "safetensors";
    if (size < 8)
        return bert__err(err, BERT_EFORMAT,
                         "%s: file is %zu bytes, too short for a safetensors "
                         "header",
                         label, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | b[i];
    if (hlen > BERT_ST_MAX_HEADER)
        return bert__err(err, BERT_EFORMAT,
                         "%s: header length %llu exceeds the 100 MB limit",
                         label, (unsigned long long)hlen);
    if (hlen > size - 8)
        return bert__err(err, BERT_EFORMAT,
                         "%s: header length %llu runs past the end of the "
                         "file (%zu bytes): truncated or not a safetensors file",
                         label, (unsigned long long)hlen, size);
    if (hlen < 2)
        return bert__err(err, BERT_EFORMAT,
                         "%s: header length %llu is too small", label,
                         (unsigned long long)hlen);

    const unsigned char *data = b + 8 + hlen;
    size_t dsize = size - 8 - (size_t)hlen;

    json_error_t jerr;
    root = json_loadb((const char *)b + 8, (size_t)hlen, JSON_REJECT_DUPLICATES,
                      &jerr);
    if (!root)
        return bert__err(err, BERT_EFORMAT,
                         "%s: header is not valid JSON: %s (header byte %d)",
                         label, jerr.text, jerr.position);
    if (!json_is_object(root)) {
        rc = bert__err(err, BERT_EFORMAT, "%s: header is not a JSON object",
                       label);
        goto out;
    }

    /* Count entries and name bytes. */
    size_t n = 0, namebytes = 0;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        n++;
        namebytes += strlen(key) + 1;
    }
    f.n_tensors = n;
    f.tensors = calloc(n ? n : 1, sizeof *f.tensors);
    f.names = malloc(namebytes ? namebytes : 1);
    byoff = malloc((n ? n : 1) * sizeof *byoff);
    if (!f.tensors || !f.names || !byoff) {
        rc = bert__err(err, BERT_ENOMEM, "%s: out of memory for %zu tensors",
                       label, n);
        goto out;
    }

    size_t i = 0;
    char *np = f.names;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(val)) {
                rc = bert__err(err, BERT_EFORMAT,
                               "%s: __metadata__ is not an object", label);
                goto out;
            }
            continue;
        }
        bert_st_tensor *t = &f.tensors[i];
        size_t kl = strlen(key);
        /* jansson keys may contain NUL when the header has "\u0000". */
        memcpy(np, key, kl + 1);
        t->name = np;
        np += kl + 1;
        if (!json_is_object(val)) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': entry is not a JSON object", label,
                           key);
            goto out;
        }
        json_t *jd = json_object_get(val, "dtype");
        json_t *js = json_object_get(val, "shape");
        json_t *jo = json_object_get(val, "data_offsets");
        if (!json_is_string(jd) || !json_is_array(js) || !json_is_array(jo)) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': needs string \"dtype\", array "
                           "\"shape\" and array \"data_offsets\"",
                           label, key);
            goto out;
        }
        if (dtype_from_name(json_string_value(jd), &t->dtype)) {
            rc = bert__err(err, BERT_EUNSUPPORTED,
                           "%s: tensor '%s': unsupported dtype '%.32s' "
                           "(supported: F32, F16, BF16, F64 and integer types)",
                           label, key, json_string_value(jd));
            goto out;
        }
        size_t nd = json_array_size(js);
        if (nd > BERT_ST_MAX_DIMS) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': %zu dimensions (at most %d)",
                           label, key, nd, BERT_ST_MAX_DIMS);
            goto out;
        }
        t->ndim = (int)nd;
        size_t ne = 1;
        for (size_t d = 0; d < nd; d++) {
            size_t v;
            if (json_size(json_array_get(js, d), &v)) {
                rc = bert__err(err, BERT_EFORMAT,
                               "%s: tensor '%s': shape[%zu] is not a "
                               "non-negative integer",
                               label, key, d);
                goto out;
            }
            t->shape[d] = v;
            if (bert__mul_size(ne, v, &ne)) {
                rc = bert__err(err, BERT_EFORMAT,
                               "%s: tensor '%s': shape product overflows",
                               label, key);
                goto out;
            }
        }
        t->nelem = ne;
        if (bert__mul_size(ne, bert__st_dtype_size(t->dtype), &t->nbytes)) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': byte size overflows", label, key);
            goto out;
        }
        size_t ob, oe;
        if (json_array_size(jo) != 2 || json_size(json_array_get(jo, 0), &ob) ||
            json_size(json_array_get(jo, 1), &oe)) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': data_offsets must be two "
                           "non-negative integers",
                           label, key);
            goto out;
        }
        if (ob > oe || oe > dsize) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': data_offsets [%zu, %zu] lie "
                           "outside the data section (%zu bytes): truncated "
                           "file?",
                           label, key, ob, oe, dsize);
            goto out;
        }
        if (oe - ob != t->nbytes) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensor '%s': data_offsets span %zu bytes but "
                           "dtype %s and shape need %zu",
                           label, key, oe - ob, bert__st_dtype_name(t->dtype),
                           t->nbytes);
            goto out;
        }
        t->data = data + ob;
        byoff[i] = t;
        i++;
    }

    /* No two tensors may share bytes (empty tensors occupy none). */
    qsort(byoff, n, sizeof *byoff, cmp_offset);
    const bert_st_tensor *prev = NULL;
    for (size_t k = 0; k < n; k++) {
        if (byoff[k]->nbytes == 0)
            continue;
        if (prev && (const unsigned char *)byoff[k]->data <
                        (const unsigned char *)prev->data + prev->nbytes) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: tensors '%s' and '%s' overlap in the data "
                           "section",
                           label, prev->name, byoff[k]->name);
            goto out;
        }
        prev = byoff[k];
    }
    qsort(f.tensors, n, sizeof *f.tensors, cmp_name);
    for (size_t k = 1; k < n; k++)
        if (strcmp(f.tensors[k - 1].name, f.tensors[k].name) == 0) {
            /* Only possible with embedded NULs in keys. */
            rc = bert__err(err, BERT_EFORMAT, "%s: duplicate tensor name '%s'",
                           label, f.tensors[k].name);
            goto out;
        }
    f.bytes = b;
    f.size = size;

out:
    free(byoff);
    json_decref(root);
    if (rc != BERT_OK) {
        free(f.tensors);
        free(f.names);
        return rc;
    }
    *out = f;
    return BERT_OK;
}

int bert__st_open(const char *path, bert_st_file *out, bert_error *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return bert__err(err, e == ENOENT ? BERT_EMISSING : BERT_EIO,
                         "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bert__err(err, BERT_EIO, "%s: not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    if (size < 8) {
        close(fd);
        return bert__err(err, BERT_EFORMAT,
                         "%s: file is %zu bytes, too short for a safetensors "
                         "header",
                         path, size);
    }
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return bert__err(err, BERT_EIO, "%s: mmap failed: %s", path,
                         strerror(e));
    int rc = bert__st_parse(p, size, path, out, err);
    if (rc != BERT_OK) {
        munmap(p, size);
        return rc;
    }
    out->mapped = 1;
    return BERT_OK;
}

void bert__st_close(bert_st_file *f)
{
    if (!f)
        return;
    if (f->mapped && f->bytes)
        munmap((void *)f->bytes, f->size);
    free(f->tensors);
    free(f->names);
    memset(f, 0, sizeof *f);
}

const bert_st_tensor *bert__st_find(const bert_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, f->tensors[mid].name);
        if (c == 0)
            return &f->tensors[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ---- conversion ----------------------------------------------------------- */

const float *bert__st_f32_direct(const bert_st_tensor *t)
{
    if (t->dtype != BERT_DT_F32 || ((uintptr_t)t->data & 3u) != 0)
        return NULL;
    return (const float *)t->data;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400u) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) |
                   ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void bert__st_to_f32(const bert_st_tensor *t, float *dst)
{
    const unsigned char *p = t->data;
    size_t n = t->nelem;
    switch (t->dtype) {
    case BERT_DT_F32:
        memcpy(dst, p, n * 4);
        break;
    case BERT_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = f16_to_f32(h);
        }
        break;
    case BERT_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&dst[i], &bits, 4);
        }
        break;
    case BERT_DT_F64:
        for (size_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, p + 8 * i, 8);
            dst[i] = (float)d;
        }
        break;
    default: {
        int64_t v;
        for (size_t i = 0; i < n; i++) {
            bert_st_tensor one = *t;
            one.nelem = 1;
            one.data = p + i * bert__st_dtype_size(t->dtype);
            bert__st_to_i64(&one, &v);
            dst[i] = (float)v;
        }
    }
    }
}

int bert__st_to_i64(const bert_st_tensor *t, int64_t *dst)
{
    const unsigned char *p = t->data;
    for (size_t i = 0; i < t->nelem; i++) {
        switch (t->dtype) {
        case BERT_DT_I64:
            memcpy(&dst[i], p + 8 * i, 8);
            break;
        case BERT_DT_I32: {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            dst[i] = v;
            break;
        }
        case BERT_DT_I16: {
            int16_t v;
            memcpy(&v, p + 2 * i, 2);
            dst[i] = v;
            break;
        }
        case BERT_DT_I8:
            dst[i] = (int8_t)p[i];
            break;
        case BERT_DT_U8:
        case BERT_DT_BOOL:
            dst[i] = p[i];
            break;
        default:
            return BERT_EINVAL;
        }
    }
    return BERT_OK;
}

/* ---- writing -------------------------------------------------------------- */

int bert__st_write(const char *path, const bert_st_wtensor *t, size_t n,
                   bert_error *err)
{
    json_t *root = json_object();
    char *hdr = NULL;
    FILE *fp = NULL;
    int rc = BERT_OK;
    size_t off = 0;

    if (!root)
        return bert__err(err, BERT_ENOMEM, "%s: out of memory", path);
    json_t *meta = json_pack("{s:s}", "format", "pt");
    if (!meta || json_object_set_new(root, "__metadata__", meta)) {
        rc = bert__err(err, BERT_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t ds = bert__st_dtype_size(t[i].dtype);
        size_t ne = 1;
        if (!t[i].name || !*t[i].name || ds == 0 || t[i].ndim < 0 ||
            t[i].ndim > BERT_ST_MAX_DIMS || (!t[i].data && !t[i].fill) ||
            strcmp(t[i].name, "__metadata__") == 0 ||
            json_object_get(root, t[i].name)) {
            rc = bert__err(err, BERT_EINVAL,
                           "%s: tensor %zu: bad or duplicate name, dtype or "
                           "ndim, or no data",
                           path, i);
            goto out;
        }
        json_t *shape = json_array();
        for (int d = 0; d < t[i].ndim; d++) {
            json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
            if (bert__mul_size(ne, t[i].shape[d], &ne)) {
                json_decref(shape);
                rc = bert__err(err, BERT_EINVAL, "%s: tensor '%s' too large",
                               path, t[i].name);
                goto out;
            }
        }
        size_t nb = ne * ds;
        json_t *e = json_pack("{s:s,s:o,s:[I,I]}", "dtype",
                              bert__st_dtype_name(t[i].dtype), "shape", shape,
                              "data_offsets", (json_int_t)off,
                              (json_int_t)(off + nb));
        if (!e || json_object_set_new(root, t[i].name, e)) {
            rc = bert__err(err, BERT_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        off += nb;
    }
    hdr = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!hdr) {
        rc = bert__err(err, BERT_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t hl = strlen(hdr);
    size_t pad = (64 - (8 + hl) % 64) % 64;
    uint64_t hlen = hl + pad;
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++)
        lenb[i] = (unsigned char)(hlen >> (8 * i));
    fp = fopen(path, "wb");
    if (!fp) {
        rc = bert__err(err, BERT_EIO, "%s: cannot create: %s", path,
                       strerror(errno));
        goto out;
    }
    int bad = fwrite(lenb, 1, 8, fp) != 8 || fwrite(hdr, 1, hl, fp) != hl;
    for (size_t k = 0; k < pad && !bad; k++)
        bad = fputc(' ', fp) == EOF;
    for (size_t i = 0; i < n && !bad; i++) {
        size_t ne = 1;
        for (int d = 0; d < t[i].ndim; d++)
            ne *= t[i].shape[d];
        size_t nb = ne * bert__st_dtype_size(t[i].dtype);
        if (t[i].data) {
            bad = nb && fwrite(t[i].data, 1, nb, fp) != nb;
            continue;
        }
        unsigned char piece[1 << 16];
        for (size_t at = 0; at < nb && !bad; at += sizeof piece) {
            size_t k = nb - at < sizeof piece ? nb - at : sizeof piece;
            t[i].fill(t[i].ctx, at, piece, k);
            bad = fwrite(piece, 1, k, fp) != k;
        }
    }
    if (fclose(fp) != 0)
        bad = 1;
    fp = NULL;
    if (bad)
        rc = bert__err(err, BERT_EIO, "%s: write failed: %s", path,
                       strerror(errno));
out:
    free(hdr);
    json_decref(root);
    return rc;
}
