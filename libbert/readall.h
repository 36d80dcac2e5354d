/*
 * libbert/readall.h - reading the rest of a file into memory, for the small
 * text files of a model directory (config.json, vocab.txt).  Header-only
 * (never installed): the programs that compile libbert/config.c on its own
 * (fuzzers, trainer tests) need no other file.
 */
#ifndef LIBBERT_READALL_H
#define LIBBERT_READALL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/bert_tokenizer.h"

/* Reads the rest of f into a malloc'd buffer (*out, not NUL-terminated,
 * *len bytes).  With max > 0, a file that fills a max-byte buffer is
 * refused.  Returns BERT_OK, BERT_ENOMEM, BERT_EIO (read error) or
 * BERT_ETOOLONG; *out and *len are set only on BERT_OK.  The caller writes
 * the message. */
static inline int bert__read_all(FILE *f, size_t max, char **out,
                                 size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return BERT_ENOMEM;
    for (;;) {
        if (n == cap) {
            if (max && cap >= max) {
                free(buf);
                return BERT_ETOOLONG;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return BERT_ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return BERT_EIO;
    }
    *out = buf;
    *len = n;
    return BERT_OK;
}

/* Opens path for reading when it is a regular file.  A FIFO, device or
 * directory would block the loader forever or never end: it is opened
 * without blocking, seen by fstat and refused with *not_regular = 1 (errno
 * EINVAL).  Returns the stream, or NULL with errno set. */
static inline FILE *bert__fopen_regular(const char *path, int *not_regular)
{
    *not_regular = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        *not_regular = S_ISREG(st.st_mode) ? 0 : 1;
        close(fd);
        errno = *not_regular ? EINVAL : e;
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

#endif
