/*
 * libbert/safetensors.h - read (and write) the safetensors format.
 *
 * Internal API (bert__st_*), usable by every part of libbert (inference,
 * training, tests that compile libbert/safetensors.c in).
 *
 * Format: an 8-byte little-endian u64 N, then N bytes of JSON
 *   {"__metadata__": {...}, "name": {"dtype": "F32", "shape": [2, 3],
 *    "data_offsets": [begin, end]}, ...}
 * then the data section; offsets are relative to the data section, tensors
 * are row-major and contiguous.
 *
 * Everything is validated before any tensor is handed out:
 *  - file >= 8 bytes, 2 <= N <= 100 MB and 8 + N <= file size;
 *  - the header is a JSON object (jansson, duplicate keys rejected); every
 *    entry but "__metadata__" is an object with a known dtype string, a shape
 *    of <= 8 non-negative integers and two integer data_offsets;
 *  - begin <= end <= data-section size, end - begin == prod(shape) *
 *    dtype size (every product checked for overflow);
 *  - no two tensors overlap.
 * Failure messages name the file label and the tensor.
 *
 * The byte buffer is never modified.  Tensor data pointers point into it and
 * may be unaligned: use bert__st_f32_direct() / bert__st_to_f32().
 * Assumes a little-endian host (as the format does).
 */
#ifndef LIBBERT_SAFETENSORS_H
#define LIBBERT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "libbert/bert_tokenizer.h"

#define BERT_ST_MAX_DIMS 8
#define BERT_ST_MAX_HEADER (100u * 1024u * 1024u)

typedef enum {
    BERT_DT_F32 = 0,
    BERT_DT_F16,
    BERT_DT_BF16,
    BERT_DT_F64,
    BERT_DT_I64,
    BERT_DT_I32,
    BERT_DT_I16,
    BERT_DT_I8,
    BERT_DT_U8,
    BERT_DT_BOOL
} bert_dtype;

/* One tensor of a parsed file.  All fields are borrowed from the file. */
typedef struct bert_st_tensor {
    const char *name;             /* NUL-terminated */
    bert_dtype dtype;
    int ndim;                     /* 0..BERT_ST_MAX_DIMS (0 = scalar) */
    size_t shape[BERT_ST_MAX_DIMS];
    size_t nelem;                 /* prod(shape), 1 for a scalar */
    size_t nbytes;                /* nelem * bert__st_dtype_size(dtype) */
    const void *data;             /* into the file bytes; may be unaligned */
} bert_st_tensor;

/* A parsed file.  Zero-initialise or fill with bert__st_parse/open. */
typedef struct bert_st_file {
    const unsigned char *bytes;   /* whole file (mapping or caller buffer) */
    size_t size;
    int mapped;                   /* 1: bytes is our mmap, unmapped on close */
    bert_st_tensor *tensors;      /* sorted by name */
    size_t n_tensors;
    char *names;                  /* storage of the names */
} bert_st_file;

/* Size in bytes of one element of dtype. */
size_t bert__st_dtype_size(bert_dtype dt);
/* "F32", "BF16"... (static). */
const char *bert__st_dtype_name(bert_dtype dt);

/* Parses and validates `size` bytes at `buf` (the whole file).  `label`
 * (e.g. the path) prefixes error messages.  The buffer is borrowed: it must
 * outlive *out and stay unchanged.  Returns BERT_OK, or BERT_EFORMAT
 * (malformed), BERT_EUNSUPPORTED (unknown dtype), BERT_ENOMEM; on failure
 * *out is zeroed and nothing needs freeing. */
int bert__st_parse(const void *buf, size_t size, const char *label,
                   bert_st_file *out, bert_error *err);

/* Maps `path` read-only (mmap, no copy) and parses it as above.  Missing file:
 * BERT_EMISSING; unreadable / not a regular file: BERT_EIO. */
int bert__st_open(const char *path, bert_st_file *out, bert_error *err);

/* Releases what parse/open allocated (and the mapping); zeroes *f.  NULL or a
 * zeroed file is a no-op. */
void bert__st_close(bert_st_file *f);

/* Tensor called `name`, or NULL (binary search, O(log n)). */
const bert_st_tensor *bert__st_find(const bert_st_file *f, const char *name);

/* The data as const float * when it can be used in place (F32 and 4-byte
 * aligned); NULL otherwise. */
const float *bert__st_f32_direct(const bert_st_tensor *t);

/* Converts the nelem values to float32 into dst (F32 copy, F16, BF16, F64
 * rounded; integers converted).  Never fails for a parsed tensor. */
void bert__st_to_f32(const bert_st_tensor *t, float *dst);

/* Converts an integer tensor (I64/I32/I16/I8/U8/BOOL) to int64 into dst;
 * returns BERT_EINVAL for float dtypes. */
int bert__st_to_i64(const bert_st_tensor *t, int64_t *dst);

/* ---- writing ------------------------------------------------------------ */

/* A tensor to write: `data` holds nelem * dtype-size bytes, little-endian;
 * or, when data is NULL, fill produces them: called for consecutive
 * pieces, fill(ctx, at, buf, n) writes the n bytes from byte `at` of the
 * tensor into buf (tensors are filled in the order given, so a generator
 * may keep its state in ctx).  Lets writers of large generated models
 * (bert-bench's random BERT-base) stream instead of holding them. */
typedef struct bert_st_wtensor {
    const char *name;
    bert_dtype dtype;
    int ndim;
    size_t shape[BERT_ST_MAX_DIMS];
    const void *data;
    void (*fill)(void *ctx, size_t at, void *buf, size_t n);
    void *ctx;
} bert_st_wtensor;

/* Writes n tensors to `path` (created or truncated) in the given order,
 * with {"__metadata__":{"format":"pt"}}, the header padded with spaces so
 * that the data starts 64 bytes into a line of the file (a multiple of 8,
 * as the format asks, and aligned for the kernels that read weights in
 * place).  Returns BERT_OK, BERT_EINVAL (bad names/dims, duplicate names,
 * neither data nor fill), BERT_EIO, BERT_ENOMEM.  The one safetensors
 * writer: the trainer, bert-mkmodel and bert-bench's random models. */
int bert__st_write(const char *path, const bert_st_wtensor *t, size_t n,
                   bert_error *err);

#endif
