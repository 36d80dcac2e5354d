/*
 * libbert/atomicfile.h - files written whole or not at all: each goes to a
 * temporary file beside it, is flushed to disk (fsync) and renamed over the
 * final name, so that a kill, a full disk or a crash during a write leaves
 * the previous file intact.  Header-only (never installed), like readall.h:
 * the library's model-directory writer (libbert/train/modeldir.c) and the
 * tools (apps/common.c) share it.
 *
 * bert__file_create(path, tmp): opens the temporary file for path (its
 * name, at most 4096 bytes, is written to tmp) for writing; NULL with errno
 * set.
 * bert__file_commit(f, tmp, path): flushes, fsyncs and closes f, renames
 * tmp to path and fsyncs the directory.  Returns 0, or -1 with errno set
 * after removing tmp (path untouched).  f NULL: only the rename part (for a
 * file written by someone else at tmp).
 * bert__file_discard(f, tmp): closes f (when not NULL) and removes tmp.
 */
#ifndef LIBBERT_ATOMICFILE_H
#define LIBBERT_ATOMICFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline FILE *bert__file_create(const char *path, char *tmp)
{
    /* "DIR/.NAME.tmp-PID": hidden, beside path (rename stays on one file
     * system), distinct per process */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dl = slash ? (int)(base - path) : 0;
    int n = snprintf(tmp, 4096, "%.*s.%s.tmp-%ld", dl, path, base,
                     (long)getpid());
    if (n < 0 || n >= 4096) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
    }
    return f;
}

/* fsync of the directory holding path (the rename itself) */
static inline int bert__file_sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path),
                 path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    /* some file systems cannot fsync a directory: not an error */
    if (rc && (errno == EINVAL || errno == EROFS))
        rc = 0;
    close(fd);
    return rc;
}

static inline int bert__file_commit(FILE *f, const char *tmp,
                                    const char *path)
{
    int e = 0;
    if (f) {
        if (fflush(f) || ferror(f))
            e = errno ? errno : EIO;
        if (!e && fsync(fileno(f)))
            e = errno;
        if (fclose(f) && !e)
            e = errno ? errno : EIO;
    } else {
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd))
            e = errno;
        if (fd >= 0)
            close(fd);
    }
    if (!e && rename(tmp, path))
        e = errno;
    if (e) {
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (bert__file_sync_dir(path)) /* the file is in place; report the failed sync */
        return -1;
    return 0;
}

static inline void bert__file_discard(FILE *f, const char *tmp)
{
    int e = errno;
    if (f)
        fclose(f);
    unlink(tmp);
    errno = e;
}

#endif
