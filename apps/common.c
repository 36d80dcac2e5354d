/* common.c - helpers shared by the command-line tools. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <sched.h>
#include "apps/common.h"
#include "libbert/atomicfile.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

long app_read_line(FILE *f, char **buf, size_t *cap)
{
    size_t n = 0;
    int c;
    while ((c = getc(f)) != EOF) {
        if (n + 1 >= *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            char *nb = realloc(*buf, nc);
            if (!nb)
                return -2;
            *buf = nb;
            *cap = nc;
        }
        if (c == '\n')
            break;
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return -1;
    (*buf)[n] = '\0';
    return (long)n;
}

/* ---- default models and JSON output (bert-classify, -sentiment, -tag) ---- */

#ifndef BERT_BUILD_MODELDIR
#define BERT_BUILD_MODELDIR "data"
#endif
#ifndef BERT_BUILD_DIR
#define BERT_BUILD_DIR "."
#endif
#ifndef BERT_INSTALLED_MODELDIR
#define BERT_INSTALLED_MODELDIR "/usr/local/share/libbert/models"
#endif

static int has_config(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s/config.json", dir, name);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* 1 when this program runs from the build tree (libtool's .libs/ under
 * the directory it was built in), not from an installed copy. */
static int in_build_tree(void)
{
    char exe[4096], top[4096];
    if (!realpath("/proc/self/exe", exe) || !realpath(BERT_BUILD_DIR, top))
        return 0;
    size_t n = strlen(top);
    return strncmp(exe, top, n) == 0 && exe[n] == '/';
}

const char *app_default_model(const char *name, char *buf, size_t cap,
                              bert_error *err)
{
    /* The build tree's data/ only for the programs of the build tree (an
     * installed program never looks there: it used to, first, and then
     * failed once the tree moved), after $LIBBERT_MODELDIR; everything
     * else is the library's search. */
    const char *env = getenv("LIBBERT_MODELDIR");
    if ((!env || !*env) && in_build_tree() &&
        has_config(BERT_BUILD_MODELDIR, name)) {
        snprintf(buf, cap, "%s/%s", BERT_BUILD_MODELDIR, name);
        return buf;
    }
    return bert_default_model_dir(name, buf, cap, err) ? NULL : buf;
}


/* Length of the UTF-8 sequence at s (1..4) if valid, else 0: the length
 * its first byte announces, when the library takes those bytes as valid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    return len <= n && bert_utf8_valid((const char *)s, len) == len ? len : 0;
}

void app_json_string(FILE *f, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    putc('"', f);
    while (i < n) {
        unsigned c = u[i];
        const char *esc = NULL;
        char ubuf[8];
        size_t l = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c < 0x20 || c == 0x7F) {
            snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
            esc = ubuf;
        } else if (c >= 0x80 && !(l = utf8_seq(u + i, n - i))) {
            esc = "\\ufffd";
            l = 1;
        }
        if (esc) {
            fwrite(s + run, 1, i - run, f);
            fputs(esc, f);
            i += l;
            run = i;
        } else {
            i += l;
        }
    }
    fwrite(s + run, 1, i - run, f);
    putc('"', f);
}

/* ---- progress ---- */

int app_progress_ok(void)
{
    struct stat o, e;
    if (!isatty(STDERR_FILENO))
        return 0;
    if (isatty(STDOUT_FILENO) && fstat(STDOUT_FILENO, &o) == 0 &&
        fstat(STDERR_FILENO, &e) == 0 && o.st_rdev == e.st_rdev)
        return 0;
    return 1;
}

/* ---- --threads ---- */

int app_parse_threads(const char *prog, const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 1 || v > 1024) {
        fprintf(stderr, "%s: --threads needs a number from 1 to 1024, not "
                "'%s'\n", prog, s);
        return -1;
    }
    long cpus = -1;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = CPU_COUNT(&set);
#endif
    if (cpus < 1)
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus >= 1 && v > cpus) {
        fprintf(stderr, "%s: note: --threads %lld is more than the %ld CPU(s) "
                "available; using %ld\n", prog, v, cpus, cpus);
        v = cpus;
    }
    return (int)v;
}

void app_text_error(const char *prog, const char *where, long line,
                    const char *msg)
{
    if (line > 0)
        fprintf(stderr, "%s: %s:%ld: %s\n", prog, where, line, msg);
    else
        fprintf(stderr, "%s: %s: %s\n", prog, where, msg);
}

int app_exit_status(const char *prog, long long n_errors)
{
    if (fflush(stdout) != 0) {
        fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
        return EXIT_BADINPUT;
    }
    return n_errors ? EXIT_BADINPUT : EXIT_OK;
}

/* ---- files written whole or not at all (libbert/atomicfile.h) ---- */

FILE *app_create(const char *path, char *tmp)
{
    return bert__file_create(path, tmp);
}

int app_commit(FILE *f, const char *tmp, const char *path)
{
    return bert__file_commit(f, tmp, path);
}

void app_discard(FILE *f, const char *tmp)
{
    bert__file_discard(f, tmp);
}

double app_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int app_out_dir(const char *prog, const char *opt, const char *dir)
{
    struct stat st;
    char probe[4200], tmp[4300];
    FILE *f;
    const char *sp = *opt ? " " : "";
    if (mkdir(dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "%s: cannot create %s%s%s: %s\n", prog, opt, sp, dir,
                strerror(errno));
        return -1;
    }
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s%s%s is not a directory\n", prog, opt, sp, dir);
        return -1;
    }
    if (snprintf(probe, sizeof probe, "%s/.libbert-probe", dir) >=
            (int)sizeof probe) {
        fprintf(stderr, "%s: %s%s%s: path too long\n", prog, opt, sp, dir);
        return -1;
    }
    if (!(f = app_create(probe, tmp))) {
        fprintf(stderr, "%s: cannot write into %s%s%s: %s\n", prog, opt, sp,
                dir, strerror(errno));
        return -1;
    }
    app_discard(f, tmp);
    return 0;
}

/* ---- option tables ---- */

/* Stores arg's value at p as kind says; -1 after a message. */
static int opt_store(const char *prog, int kind, void *p, const char *arg)
{
    char *e;
    errno = 0;
    double v = kind >= APP_DBL ? strtod(arg, &e) : 0;
    if (kind >= APP_DBL && (*arg == 0 || *e || errno || !isfinite(v))) {
        fprintf(stderr, "%s: bad number '%s'\n", prog, arg);
        return -1;
    }
    switch (kind) {
    case APP_STR: *(const char **)p = arg; break;
    case APP_SET: *(int *)p = 1; break;
    case APP_CLR: *(int *)p = 0; break;
    case APP_DBL: *(double *)p = v; break;
    case APP_MIN: *(double *)p = v * 60; break;
    case APP_LNG: *(long *)p = (long)v; break;
    case APP_FLT: *(float *)p = (float)v; break;
    case APP_SZ: *(size_t *)p = v > 0 ? (size_t)(long)v : 0; break;
    case APP_U64: *(uint64_t *)p = (uint64_t)(unsigned long long)v; break;
    default: return (*(long *)p = app_parse_threads(prog, arg)) < 0 ? -1 : 0;
    }
    return 0;
}

int app_options(const char *prog, int argc, char **argv,
                const app_optdef *defs, size_t n, void *base,
                void (*usage)(FILE *))
{
    enum { O_HELP = 1, O_VERSION = 2, O_FIRST = 256 };
    struct option *lo = calloc(n + 3, sizeof *lo);
    if (!lo) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_BADINPUT;
    }
    lo[0] = (struct option){"help", 0, 0, O_HELP};
    lo[1] = (struct option){"version", 0, 0, O_VERSION};
    for (size_t i = 0; i < n; i++)
        lo[i + 2] = (struct option){defs[i].name, defs[i].kind == APP_STR ||
                                    defs[i].kind >= APP_DBL, 0,
                                    O_FIRST + (int)i};
    int c, rc = -1;
    while (rc < 0 && (c = getopt_long(argc, argv, "q", lo, NULL)) != -1) {
        if (c == 'q')
            c = O_FIRST; /* -q: the table's first entry */
        if (c == O_VERSION) {
            printf("%s (libbert) %s\n", prog, BERT_VERSION_STRING);
            rc = EXIT_OK;
        } else if (c == O_HELP) {
            usage(stdout);
            rc = EXIT_OK;
        } else if (c < O_FIRST) {
            usage(stderr);
            rc = EXIT_USAGE;
        } else if (opt_store(prog, defs[c - O_FIRST].kind,
                             (char *)base + defs[c - O_FIRST].off, optarg)) {
            rc = EXIT_USAGE;
        }
    }
    free(lo);
    return rc;
}
