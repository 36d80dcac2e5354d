/*
 * bert-classify - classify one column of a CSV file with a BERT sequence
 * classification model, streaming.
 *
 * The CSV goes through libcsv's push parser (strict RFC 4180: quotes,
 * embedded newlines, CRLF or LF; a UTF-8 BOM is skipped).  Input is fed one
 * physical line at a time so every record knows the line it starts on.
 *
 * Two threads share the work, double-buffered.  The reader thread parses
 * the CSV and checks every record as it completes (columns present, valid
 * UTF-8), filling a window of --window rows.  The main thread takes a full
 * window and classifies its rows with bert_classify_batch (tokenized, sorted
 * by token count, run in packed batches of --batch rows of similar length),
 * then writes them back in input order with the appended columns; meanwhile
 * the reader fills the other window.  At most two windows are held, so
 * memory stays flat whatever the file size.
 *
 * Every input row gives one output row.  A row whose text cannot be
 * classified (missing column, invalid UTF-8, ...) gets an empty label and
 * the reason in the `error` column.  A malformed CSV (a stray quote, or a
 * quoted field still open at end of file) stops the run with exit code 2
 * after every complete row before it has been written.
 *
 * Only the main thread writes to the output and to stderr and uses the
 * session; the reader only fills the window it holds and tells the main
 * thread what to report (row errors, the message that stops the run) through
 * it.  A window changes hands under the handoff mutex, which orders the
 * reader's writes before the main thread's reads and back.
 */
#include "apps/common.h"

#include <csv.h>
#include <errno.h>
#include <getopt.h>
#include <libbert/bert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "bert-classify"
#define MAX_ERRORS_SHOWN 20
#define WINDOW_BATCHES 8    /* default --window, in batches */
#define MAX_ROWS (1u << 16) /* cap of --window */
#define MAX_BATCH 4096      /* most --batch (as bert-infer): the activations
                               grow with the tokens of a batch */

/* Where a row's error arose: the one-batch-at-a-time tool reported, per
 * batch, the input errors first and then the model's; report_errors keeps
 * that order. */
enum { ERR_NONE = 0, ERR_INPUT, ERR_MODEL };

/* One CSV record: its fields back to back in buf. */
typedef struct row {
    char *buf;
    size_t len, cap;
    size_t *foff, *flen;
    size_t nf, fcap;
    long line;              /* physical line the record starts on */
    long long rowno;        /* 1-based data row */
    int ok;                 /* checked (then classified) */
    int err_stage;          /* ERR_* */
    const char *text, *pair;/* its text and pair fields (pair NULL: none) */
    size_t text_len, pair_len;
    size_t vi;              /* its index among the window's checked rows */
    char err[320];
} row;

/* Up to --window consecutive rows, checked by the reader. */
typedef struct window {
    row *rows;              /* [window]; rows[0..nrows) are complete */
    size_t nrows;
    long long consumed;     /* input bytes read when it was handed over */
    int last;               /* no window follows */
    int fatal;              /* exit status to stop with after writing it */
    char *msg;              /* what to print on stderr after writing it */
    size_t msg_len, msg_cap;
} window;

/* Who holds which window: full[i] means the main thread does. */
typedef struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int full[2];
} handoff;

struct app;

/* The reader thread's state.  header, header_ok, width and crlf are set
 * before the first window is handed over and never change after, so the
 * main thread may read them once it holds a window. */
typedef struct reader {
    const struct app *a;    /* options, tokenizer: read-only */
    FILE *in;
    char *buf;              /* read block */
    long long consumed;
    struct csv_parser p;
    int csv_ready;          /* csv_init succeeded: csv_free needed */
    long line, pending_line;
    row header;
    int header_done, header_ok, have_first;
    const char *eol;        /* line ending of the first record: the output's */
    const char *chunk_eol;  /* ending of the physical line being parsed */
    int cr_pending;         /* the last block ended in '\r' */
    size_t width;
    long col, pcol;         /* 0-based, -1 none */
    long long nrecords;
    int fatal;              /* stop parsing: the window says why */
    window *win;            /* the app's two windows */
    handoff *h;
    window *w;              /* the window being filled, win + cur */
    int cur;
} reader;

typedef struct app {
    /* options */
    const char *model_dir, *col_spec, *pcol_spec, *out_path, *in_path;
    const char *prefix;     /* of the added columns/keys ("" by default) */
    char **keys;            /* JSONL: the header's names made unique */
    size_t *keylen;         /* their lengths (a name may hold NUL bytes) */
    int col_default;        /* --column not given: "text" */
    char out_tmp[4096];     /* --out is written here, renamed at the end */
    int all_scores, jsonl, no_header, threads;
    size_t top_k, batch, window;
    /* input (opened by the main thread, then the reader's) */
    const char *fname;
    long long in_size;      /* bytes, -1 unknown */
    /* the two windows and the reader */
    window win[2];
    handoff h;
    int h_ready;            /* mutex and condition initialised */
    reader rd;
    pthread_t rd_thread;
    /* output (main thread) */
    FILE *out;
    long long nwritten, nerrors, ndone, consumed;
    long long nmodel_errors; /* rows the model failed on: exit status 2 */
    long long ntruncated;   /* rows cut to the model's maximum length */
    long long nwindowed;    /* rows classified over several windows */
    /* model */
    bert_model *m;
    bert_session *s;
    size_t C;
    bert_window_params longw; /* long texts: windows, or --truncate */
    int long_truncate;
    const char *long_stride;
    bert_function fn;
    /* one window's checked rows, for bert_classify_batch */
    const char **texts, **pairs;  /* [window] */
    size_t *lens, *pair_lens;     /* [window] */
    bert_classify_result *res;    /* [window] */
    float *scores;          /* [window][C], by checked row (row.vi) */
    size_t *order;          /* [C], labels by score */
    /* progress */
    int progress;
    double t0, last_draw;
} app;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(EXIT_BADINPUT);
    }
    return q;
}

static void grow_to(void *pp, size_t *cap, size_t need, size_t el)
{
    void **p = (void **)pp;
    if (need <= *cap)
        return;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    *p = xrealloc(*p, nc * el);
    *cap = nc;
}

static void row_reset(row *r)
{
    r->len = 0;
    r->nf = 0;
    r->ok = 0;
    r->err_stage = ERR_NONE;
    r->err[0] = '\0';
}

static void row_add(row *r, const char *s, size_t n)
{
    grow_to(&r->buf, &r->cap, r->len + n + 1, 1);
    size_t fc = r->fcap;
    grow_to(&r->foff, &r->fcap, r->nf + 1, sizeof(size_t));
    grow_to(&r->flen, &fc, r->nf + 1, sizeof(size_t));
    if (n)
        memcpy(r->buf + r->len, s, n);
    r->foff[r->nf] = r->len;
    r->flen[r->nf] = n;
    r->len += n;
    r->buf[r->len] = '\0';
    r->nf++;
}

static void row_free(row *r)
{
    free(r->buf);
    free(r->foff);
    free(r->flen);
}

/* Sets r's error message (stage ERR_INPUT or ERR_MODEL); reported later by
 * the main thread, in row order. */
static void row_fail(row *r, int stage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->ok = 0;
    r->err_stage = stage;
}

/* Appends to the message the main thread prints after writing w. */
static void window_vmsg(window *w, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    grow_to(&w->msg, &w->msg_cap, w->msg_len + (size_t)n + 1, 1);
    vsnprintf(w->msg + w->msg_len, (size_t)n + 1, fmt, ap);
    w->msg_len += (size_t)n;
}

static void window_msg(window *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    window_vmsg(w, fmt, ap);
    va_end(ap);
}

/* ---- output ------------------------------------------------------------- */

static void put_field(FILE *f, const char *s, size_t n)
{
    int quote = n > 0 && (s[0] == ' ' || s[n - 1] == ' ');
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (quote)
        csv_fwrite(f, s, n);
    else
        fwrite(s, 1, n, f);
}

static void put_str(FILE *f, const char *s)
{
    put_field(f, s, strlen(s));
}

static void put_score(FILE *f, float v)
{
    fprintf(f, "%.9g", (double)v);
}

static const char *label_name(const app *a, size_t i)
{
    const char *l = bert_model_label(a->m, (int)i);
    return l ? l : "";
}

/* The i-th name the output adds to the input's (--prefix first): CSV
 * label, score, label_K, score_K (--top-k), score_LABEL (--all-scores),
 * error; JSONL label, score, top_k, scores, error.  NULL past the last.
 * The result lives until the next call. */
static const char *added_name(const app *a, size_t i)
{
    static char buf[1024];
    const char *base = NULL;
    char tmp[64];
    if (a->jsonl) {
        static const char *const k[] = {"label", "score", "top_k", "scores",
                                        "error"};
        if (i >= 5)
            return NULL;
        base = k[i];
    } else if (i < 2) {
        base = i ? "score" : "label";
    } else if (i < 2 * a->top_k) {
        snprintf(tmp, sizeof tmp, "%s_%zu", i % 2 ? "score" : "label",
                 i / 2 + 1);
        base = tmp;
    } else if (a->all_scores && i < 2 * a->top_k + a->C) {
        snprintf(buf, sizeof buf, "%sscore_%s", a->prefix,
                 label_name(a, i - 2 * a->top_k));
        return buf;
    } else if (i == 2 * a->top_k + (a->all_scores ? a->C : 0)) {
        base = "error";
    } else {
        return NULL;
    }
    snprintf(buf, sizeof buf, "%s%s", a->prefix, base);
    return buf;
}

static int field_is(const row *h, size_t j, const char *s)
{
    return h->flen[j] == strlen(s) && memcmp(h->buf + h->foff[j], s,
                                             h->flen[j]) == 0;
}

/* The input column whose name an added column would repeat (-1: none);
 * its name in *name. */
static long name_clash(const app *a, const row *h, const char **name)
{
    for (size_t i = 0; (*name = added_name(a, i)); i++)
        for (size_t j = 0; j < h->nf; j++)
            if (field_is(h, j, *name))
                return (long)j;
    return -1;
}

/* JSONL keys of the header fields: the names, each repeated one renamed
 * NAME.1, NAME.2 ... (as pandas does) so that no key appears twice.  Keys
 * are compared with their lengths, not as C strings: a field may hold NUL
 * bytes, and "t\0x" renamed "t\0x.1" would still read "t" to strcmp, for
 * ever (a hang the CSV fuzzer found). */
static void make_keys(app *a)
{
    const row *h = &a->rd.header;
    size_t m = h->nf ? h->nf : 1;
    a->keys = xrealloc(NULL, m * sizeof *a->keys);
    a->keylen = xrealloc(NULL, m * sizeof *a->keylen);
    for (size_t j = 0; j < h->nf; j++) {
        size_t n = h->flen[j], len = n;
        char *k = xrealloc(NULL, n + 24);
        memcpy(k, h->buf + h->foff[j], n);
        k[n] = '\0';
        for (unsigned long d = 1;; d++) {
            size_t i = 0;
            while (i < j && !(a->keylen[i] == len &&
                              memcmp(a->keys[i], k, len) == 0))
                i++;
            if (i == j)
                break;
            len = n + (size_t)snprintf(k + n, 24, ".%lu", d);
        }
        a->keys[j] = k;
        a->keylen[j] = len;
    }
}

static void write_header(app *a)
{
    FILE *f = a->out;
    if (a->no_header)
        return;
    if (a->jsonl) {
        make_keys(a); /* jsonl keys come from the header */
        return;
    }
    const row *hd = &a->rd.header;
    for (size_t j = 0; j < hd->nf; j++) {
        put_field(f, hd->buf + hd->foff[j], hd->flen[j]);
        putc(',', f);
    }
    const char *name;
    for (size_t i = 0; (name = added_name(a, i)); i++) {
        if (i)
            putc(',', f);
        put_str(f, name);
    }
    fputs(a->rd.eol ? a->rd.eol : "\n", f);
}

/* Labels by decreasing score, ties in label order (a stable sort). */
static void rank(app *a, const float *sc)
{
    for (size_t i = 0; i < a->C; i++) {
        size_t j = i;
        while (j > 0 && sc[a->order[j - 1]] < sc[i]) {
            a->order[j] = a->order[j - 1];
            j--;
        }
        a->order[j] = i;
    }
}

/* r with its scores sc (ignored unless r->ok). */
static void write_row_csv(app *a, const row *r, const float *sc)
{
    FILE *f = a->out;
    size_t nf = r->nf > a->rd.width ? r->nf : a->rd.width;
    for (size_t j = 0; j < nf; j++) {
        if (j < r->nf)
            put_field(f, r->buf + r->foff[j], r->flen[j]);
        putc(',', f);
    }
    if (r->ok) {
        rank(a, sc);
        put_str(f, label_name(a, a->order[0]));
        putc(',', f);
        put_score(f, sc[a->order[0]]);
        for (size_t k = 1; k < a->top_k; k++) {
            putc(',', f);
            put_str(f, label_name(a, a->order[k]));
            putc(',', f);
            put_score(f, sc[a->order[k]]);
        }
        if (a->all_scores)
            for (size_t c = 0; c < a->C; c++) {
                putc(',', f);
                put_score(f, sc[c]);
            }
        putc(',', f);
    } else {
        fputs(",", f);
        for (size_t k = 1; k < a->top_k; k++)
            fputs(",,", f);
        if (a->all_scores)
            for (size_t c = 0; c < a->C; c++)
                putc(',', f);
        putc(',', f);
        put_str(f, r->err);
    }
    fputs(a->rd.eol ? a->rd.eol : "\n", f);
}

static void write_row_jsonl(app *a, const row *r, const float *sc)
{
    FILE *f = a->out;
    putc('{', f);
    if (a->no_header) {
        fputs("\"fields\":[", f);
        for (size_t j = 0; j < r->nf; j++) {
            if (j)
                putc(',', f);
            app_json_string(f, r->buf + r->foff[j], r->flen[j]);
        }
        putc(']', f);
    } else {
        for (size_t j = 0; j < r->nf; j++) {
            if (j)
                putc(',', f);
            const row *h = &a->rd.header;
            if (j < h->nf) {
                app_json_string(f, a->keys[j], a->keylen[j]);
            } else {
                char k[32];
                snprintf(k, sizeof k, "%zu", j + 1);
                app_json_string(f, k, strlen(k));
            }
            putc(':', f);
            app_json_string(f, r->buf + r->foff[j], r->flen[j]);
        }
    }
    if (r->nf || a->no_header)
        putc(',', f);
    const char *P = a->prefix;
    if (r->ok) {
        rank(a, sc);
        const char *l = label_name(a, a->order[0]);
        fprintf(f, "\"%slabel\":", P);
        app_json_string(f, l, strlen(l));
        fprintf(f, ",\"%sscore\":%.9g", P, (double)sc[a->order[0]]);
        if (a->top_k > 1) {
            fprintf(f, ",\"%stop_k\":[", P);
            for (size_t k = 0; k < a->top_k; k++) {
                l = label_name(a, a->order[k]);
                fputs(k ? ",{\"label\":" : "{\"label\":", f);
                app_json_string(f, l, strlen(l));
                fprintf(f, ",\"score\":%.9g}", (double)sc[a->order[k]]);
            }
            putc(']', f);
        }
        if (a->all_scores) {
            fprintf(f, ",\"%sscores\":{", P);
            for (size_t c = 0; c < a->C; c++) {
                l = label_name(a, c);
                if (c)
                    putc(',', f);
                app_json_string(f, l, strlen(l));
                fprintf(f, ":%.9g", (double)sc[c]);
            }
            putc('}', f);
        }
        fprintf(f, ",\"%serror\":null}\n", P);
    } else {
        fprintf(f, "\"%slabel\":null,\"%sscore\":null,\"%serror\":", P, P, P);
        app_json_string(f, r->err, strlen(r->err));
        fputs("}\n", f);
    }
}

/* ---- progress (main thread) --------------------------------------------- */

static void draw_progress(app *a, int final)
{
    double t = app_now();
    if (!a->progress || (!final && t - a->last_draw < 0.2))
        return;
    a->last_draw = t;
    double el = t - a->t0, rate = el > 0 ? (double)a->ndone / el : 0;
    if (final) {
        fputs("\r\033[K", stderr);
        return;
    }
    fprintf(stderr, "\r\033[K%lld rows  %.0f rows/s", a->ndone, rate);
    if (a->in_size > 0 && a->consumed > 0) {
        double frac = (double)a->consumed / (double)a->in_size;
        if (frac > 1)
            frac = 1;
        double eta = frac > 0 ? el * (1 - frac) / frac : 0;
        fprintf(stderr, "  %3.0f%%  ETA %ld:%02ld", frac * 100,
                (long)eta / 60, (long)eta % 60);
    }
    fflush(stderr);
}

/* ---- handoff ------------------------------------------------------------ */

/* Gives window k to the other thread: to_main 1 from the reader (full),
 * 0 from the main thread (done with it). */
static void handoff_put(handoff *h, int k, int to_main)
{
    pthread_mutex_lock(&h->mu);
    h->full[k] = to_main;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Waits until window k is the caller's: full for the main thread
 * (for_main 1), empty for the reader. */
static void handoff_wait(handoff *h, int k, int for_main)
{
    pthread_mutex_lock(&h->mu);
    while (h->full[k] != for_main)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

/* ---- reader thread: parse and tokenize ---------------------------------- */

static const char *col_name(const reader *rd, long col, char *buf, size_t cap)
{
    if (!rd->a->no_header && (size_t)col < rd->header.nf) {
        snprintf(buf, cap, "'%.*s'", (int)(rd->header.flen[col] > 60
                                               ? 60 : rd->header.flen[col]),
                 rd->header.buf + rd->header.foff[col]);
    } else {
        snprintf(buf, cap, "%ld", col + 1);
    }
    return buf;
}

/* Checks row r (its columns present, valid UTF-8) and notes its text and
 * pair for the main thread; on failure records why in r. */
static void check_row(reader *rd, row *r)
{
    char cn[80];
    if ((size_t)rd->col >= r->nf) {
        row_fail(r, ERR_INPUT, "no column %s (the row has %zu field%s)",
                 col_name(rd, rd->col, cn, sizeof cn), r->nf,
                 r->nf == 1 ? "" : "s");
        return;
    }
    if (rd->pcol >= 0 && (size_t)rd->pcol >= r->nf) {
        row_fail(r, ERR_INPUT, "no pair column %s (the row has %zu field%s)",
                 col_name(rd, rd->pcol, cn, sizeof cn), r->nf,
                 r->nf == 1 ? "" : "s");
        return;
    }
    const char *text = r->buf + r->foff[rd->col];
    size_t tlen = r->flen[rd->col];
    const char *pair = rd->pcol >= 0 ? r->buf + r->foff[rd->pcol] : NULL;
    size_t plen = rd->pcol >= 0 ? r->flen[rd->pcol] : 0;
    size_t v = bert_utf8_valid(text, tlen);
    if (v != tlen) {
        row_fail(r, ERR_INPUT, "invalid UTF-8 in column %s at byte %zu",
                 col_name(rd, rd->col, cn, sizeof cn), v);
        return;
    }
    if (pair && (v = bert_utf8_valid(pair, plen)) != plen) {
        row_fail(r, ERR_INPUT, "invalid UTF-8 in column %s at byte %zu",
                 col_name(rd, rd->pcol, cn, sizeof cn), v);
        return;
    }
    r->text = text;
    r->text_len = tlen;
    r->pair = pair;
    r->pair_len = plen;
    r->ok = 1;
}

/* Starts filling window k (the reader holds it). */
static void window_begin(reader *rd, int k)
{
    window *w = &rd->win[k];
    for (size_t i = 0; i < rd->a->window; i++)
        row_reset(&w->rows[i]);
    w->nrows = 0;
    w->last = 0;
    w->fatal = 0;
    w->msg_len = 0;
    if (w->msg)
        w->msg[0] = '\0';
    rd->w = w;
    rd->cur = k;
}

/* Hands the window being filled to the main thread; unless it is the last,
 * waits for the other one and starts filling it. */
static void window_pass(reader *rd, int last)
{
    rd->w->consumed = rd->consumed;
    rd->w->last = last;
    handoff_put(rd->h, rd->cur, 1);
    if (last)
        return;
    handoff_wait(rd->h, rd->cur ^ 1, 0);
    window_begin(rd, rd->cur ^ 1);
}

static row *current(reader *rd)
{
    if (!rd->a->no_header && !rd->header_done)
        return &rd->header;
    return &rd->w->rows[rd->w->nrows];
}

static void on_field(void *s, size_t n, void *data)
{
    reader *rd = data;
    if (rd->fatal)
        return;
    row *r = current(rd);
    if (r->nf == 0)
        r->line = rd->pending_line;
    row_add(r, s, n);
}

/* Resolves NAME or a 1-based number against the header h (NULL: none); -1
 * if neither. */
static long resolve(const row *h, const char *spec)
{
    for (size_t j = 0; h && j < h->nf; j++)
        if (h->flen[j] == strlen(spec) &&
            memcmp(h->buf + h->foff[j], spec, h->flen[j]) == 0)
            return (long)j;
    char *end;
    errno = 0;
    long v = strtol(spec, &end, 10);
    if (*spec && !*end && !errno && v >= 1)
        return v - 1;
    return -1;
}

static void on_record(int c, void *data)
{
    reader *rd = data;
    const app *a = rd->a;
    if (rd->fatal)
        return;
    row *r = current(rd);
    if (!rd->have_first) {
        rd->have_first = 1;
        rd->width = r->nf;
        rd->eol = c == -1 ? "\n" : rd->chunk_eol;
    }
    if (!a->no_header && !rd->header_done) {
        rd->header_done = 1;
        rd->col = resolve(&rd->header, a->col_spec);
        rd->pcol = a->pcol_spec ? resolve(&rd->header, a->pcol_spec) : -1;
        const char *bad = rd->col < 0 ? a->col_spec
                          : (a->pcol_spec && rd->pcol < 0) ? a->pcol_spec
                                                           : NULL;
        if (bad) {
            window_msg(rd->w, PROG ": %s: line %ld: the header has no "
                       "column '%s' (columns:", a->fname, r->line, bad);
            for (size_t j = 0; j < rd->header.nf; j++)
                window_msg(rd->w, "%s '%.*s'", j ? "," : "",
                           (int)rd->header.flen[j],
                           rd->header.buf + rd->header.foff[j]);
            window_msg(rd->w, ")%s\n",
                       a->col_default && bad == a->col_spec
                           ? "; name the text column with --column"
                           : "");
            rd->w->fatal = rd->fatal = EXIT_BADINPUT;
            return;
        }
        const char *name;
        long j = name_clash(a, &rd->header, &name);
        if (j >= 0) {
            window_msg(rd->w, PROG ": %s: line %ld: the input already has a "
                       "column '%s' (column %ld); name the added columns "
                       "with --prefix, e.g. --prefix pred_\n",
                       a->fname, r->line, name, j + 1);
            rd->w->fatal = rd->fatal = EXIT_BADINPUT;
            return;
        }
        rd->header_ok = 1;
        return;
    }
    r->rowno = ++rd->nrecords;
    check_row(rd, r);
    if (++rd->w->nrows == a->window)
        window_pass(rd, 0);
}

static int no_space(unsigned char c)
{
    (void)c;
    return 0;
}

/* Stops the run after the rows read so far: the main thread writes them,
 * then prints the message. */
static void reader_stop(reader *rd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    window_vmsg(rd->w, fmt, ap);
    va_end(ap);
    rd->w->fatal = rd->fatal = EXIT_BADINPUT;
}

/* The reader thread: parses the whole input, one physical line per
 * csv_parse call, and hands over the last window (with the reason to stop,
 * if any). */
static void *reader_main(void *arg)
{
    reader *rd = arg;
    const app *a = rd->a;
    size_t n;
    int first = 1;
    rd->line = 1;
    rd->pending_line = 1;
    while (!rd->fatal && (n = fread(rd->buf, 1, 1 << 16, rd->in)) > 0) {
        const char *buf = rd->buf;
        size_t i = 0;
        rd->consumed += (long long)n;
        if (first) {
            first = 0;
            if (n >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
                i = 3;
        }
        /* the '\n' of a CRLF split between two blocks: its line was
         * counted at the '\r' */
        if (rd->cr_pending && i < n && buf[i] == '\n') {
            if (csv_parse(&rd->p, buf + i, 1, on_field, on_record, rd) != 1)
                reader_stop(rd, PROG ": %s: line %ld: malformed CSV (%s); "
                            "stopping after %lld rows\n", a->fname, rd->line,
                            csv_strerror(csv_error(&rd->p)), rd->nrecords);
            i++;
        }
        rd->cr_pending = 0;
        while (i < n && !rd->fatal) {
            /* one physical line: up to LF, CRLF or a lone CR (old Mac
             * files), so that every record gets its own line number */
            size_t end = i;
            while (end < n && buf[end] != '\n' && buf[end] != '\r')
                end++;
            int nl = end < n;
            rd->chunk_eol = "\n";
            if (nl && buf[end] == '\r') {
                if (end + 1 < n && buf[end + 1] == '\n') {
                    end++;
                    rd->chunk_eol = "\r\n";
                } else {
                    rd->chunk_eol = "\r";
                    rd->cr_pending = end + 1 == n;
                    if (rd->cr_pending)
                        rd->chunk_eol = "\r\n"; /* most likely */
                }
            }
            if (nl)
                end++;
            if (rd->p.pstate == 0)
                rd->pending_line = rd->line;
            if (csv_parse(&rd->p, buf + i, end - i, on_field, on_record,
                          rd) != end - i) {
                reader_stop(rd, PROG ": %s: line %ld: malformed CSV (%s); "
                            "stopping after %lld rows\n", a->fname, rd->line,
                            csv_strerror(csv_error(&rd->p)), rd->nrecords);
                break;
            }
            if (nl)
                rd->line++;
            i = end;
        }
    }
    if (!rd->fatal && ferror(rd->in))
        reader_stop(rd, PROG ": %s: read error: %s\n", a->fname,
                    strerror(errno));
    if (!rd->fatal && csv_fini(&rd->p, on_field, on_record, rd) != 0)
        reader_stop(rd, PROG ": %s: line %ld: unterminated quoted field "
                    "(still open at end of file); stopping after %lld rows\n",
                    a->fname, rd->pending_line, rd->nrecords);
    window_pass(rd, 1);
    return NULL;
}

/* ---- main thread: classify and write ------------------------------------ */

/* bert_classify_batch's progress: rows of the window classified so far. */
static int on_progress(size_t done, size_t total, void *data)
{
    app *a = data;
    if (total) {
        a->ndone = a->nwritten + (long long)done;
        draw_progress(a, 0);
    }
    return 0;
}

static void report_error(app *a, const row *r)
{
    a->nerrors++;
    if (a->nerrors <= MAX_ERRORS_SHOWN) {
        draw_progress(a, 1);
        fprintf(stderr, PROG ": %s: row %lld (line %ld): %s\n", a->fname,
                r->rowno, r->line, r->err);
    } else if (a->nerrors == MAX_ERRORS_SHOWN + 1) {
        fprintf(stderr, PROG ": %s: more rows with errors; not shown\n",
                a->fname);
    }
}

/* Reports the row errors of w in the order the tool without windows did:
 * for each run of --batch input rows (counted from the first row), the
 * input errors, then the model's. */
static void report_errors(app *a, const window *w)
{
    size_t i0 = 0;
    while (i0 < w->nrows) {
        long long chunk = (w->rows[i0].rowno - 1) / (long long)a->batch;
        size_t i1 = i0;
        while (i1 < w->nrows &&
               (w->rows[i1].rowno - 1) / (long long)a->batch == chunk)
            i1++;
        for (int stage = ERR_INPUT; stage <= ERR_MODEL; stage++)
            for (size_t i = i0; i < i1; i++)
                if (w->rows[i].err_stage == stage)
                    report_error(a, &w->rows[i]);
        i0 = i1;
    }
}

/* Classifies window w's checked rows (in batches of rows of similar
 * length: bert_classify_batch) and writes its rows in input order. */
static void process_window(app *a, window *w)
{
    a->consumed = w->consumed;
    size_t nvalid = 0;
    for (size_t i = 0; i < w->nrows; i++) {
        row *r = &w->rows[i];
        if (!r->ok)
            continue;
        r->vi = nvalid;
        a->texts[nvalid] = r->text;
        a->lens[nvalid] = r->text_len;
        a->pairs[nvalid] = r->pair;
        a->pair_lens[nvalid] = r->pair_len;
        nvalid++;
    }
    /* Shortest first, ties in input order, --batch rows per packed run: the
     * encoder packs each batch without padding, so sorting saves no
     * padding; it keeps each batch's sequences of similar length. */
    bert_classify_params p = bert_classify_default_params();
    p.window = a->longw;
    p.function = a->fn;
    p.batch.batch_size = a->batch;
    p.batch.progress = on_progress;
    p.batch.progress_data = a;
    bert_error err;
    if (bert_classify_batch(a->s, a->texts, a->lens,
                            a->rd.pcol >= 0 ? a->pairs : NULL, a->pair_lens,
                            nvalid, &p, a->res, NULL, a->scores,
                            a->window * a->C, &err) != BERT_OK) {
        draw_progress(a, 1);
        fprintf(stderr, PROG ": %s: %s\n", a->fname, err.text);
        if (a->out_path)
            app_discard(NULL, a->out_tmp);
        exit(EXIT_BADINPUT);
    }
    for (size_t i = 0; i < w->nrows; i++) {
        row *r = &w->rows[i];
        if (!r->ok)
            continue;
        const bert_classify_result *res = &a->res[r->vi];
        a->ntruncated += res->n_overflow > 0;
        a->nwindowed += res->n_windows > 1;
        if (res->status == BERT_OK)
            continue;
        if (res->n_tokens == 0) { /* the tokenizer refused it */
            row_fail(r, ERR_INPUT, "%s", res->error.text[0]
                                             ? res->error.text
                                             : bert_strerror(res->status));
        } else {
            row_fail(r, ERR_MODEL, "model run failed: %s", res->error.text);
            a->nmodel_errors++;
        }
    }
    report_errors(a, w);
    for (size_t i = 0; i < w->nrows; i++) {
        const row *r = &w->rows[i];
        const float *sc = a->scores + r->vi * a->C;
        if (a->jsonl)
            write_row_jsonl(a, r, sc);
        else
            write_row_csv(a, r, sc);
    }
    a->nwritten += (long long)w->nrows;
    a->ndone = a->nwritten;
    if (ferror(a->out)) {
        fprintf(stderr, PROG ": %s: write error: %s\n",
                a->out_path ? a->out_path : "<stdout>", strerror(errno));
        if (a->out_path)
            app_discard(NULL, a->out_tmp);
        exit(EXIT_BADINPUT);
    }
    draw_progress(a, 0);
}

/* Takes the windows from the reader until the last; returns the exit status
 * the input calls for. */
static int classify_stream(app *a)
{
    int k = 0, first = 1, status;
    for (;;) {
        window *w = &a->win[k];
        handoff_wait(&a->h, k, 1);
        /* the header was read (or found wanting) before any row */
        if (first && a->rd.header_ok)
            write_header(a);
        first = 0;
        if (w->nrows)
            process_window(a, w);
        status = w->fatal;
        if (w->msg_len) {
            draw_progress(a, 1);
            fputs(w->msg, stderr);
        }
        if (w->last)
            return status;
        handoff_put(&a->h, k, 0);
        k ^= 1;
    }
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " [OPTIONS] [--column NAME|N] [FILE|-]\n"
"Classify one column of a CSV file with a BERT sequence-classification model\n"
"and write every row back with the columns label, score (and more) appended.\n"
"\n"
"  -m, --model DIR        model directory (default: the bundled sentiment model)\n"
"  -c, --column NAME|N    the text column: a header name or a 1-based number\n"
"                         (default: the header's 'text' column)\n"
"  -p, --pair-column NAME|N  second text, for sentence-pair models\n"
"  -o, --output FILE      write here instead of standard output\n"
"  -a, --all-scores       add one score_<label> column per label\n"
"  -k, --top-k K          also write label_2, score_2 ... label_K, score_K\n"
"  -f, --format csv|jsonl output format (default csv)\n"
"  -b, --batch N          rows per model run (default 32, at most 4096)\n"
"  -w, --window N         rows read ahead and sorted by length into batches\n"
"                         (at least --batch; default 8 batches)\n"
"      --truncate         classify only the first tokens of a long text (as\n"
"                         many as the model takes) instead of windows\n"
"      --stride N         tokens shared by consecutive windows of a long text\n"
"                         (default: a quarter of a window)\n"
"  -t, --threads N        threads for the model (default 1)\n"
"      --precision P      fp32 (default, exact), bf16 or int8 (int8: faster\n"
"                         on any AVX2 CPU, most with VNNI; results move\n"
"                         slightly, see docs/precision.md)\n"
"  -H, --no-header        the first row is data; columns are numbers\n"
"  -P, --prefix P         name the added columns (JSONL: keys) P + label,\n"
"                         P + score, ... (default: no prefix)\n"
"  -h, --help             this help\n"
"  -V, --version          version\n"
"\n"
"Input: RFC 4180 CSV (quoted fields, embedded newlines and quotes, CRLF,\n"
"LF or CR, optional UTF-8 BOM).  Output: one row per input row, in order.  A row\n"
"that cannot be classified (missing column, invalid UTF-8) keeps its place\n"
"with an empty label and the reason in the error column.  Scores: softmax\n"
"(or sigmoid for multi-label and one-label models; the raw value for\n"
"regression models), as Hugging Face's text-classification pipeline.\n"
"An input column named like an added one (label, score, error, ...) is an\n"
"error (exit 2): choose a --prefix.  In JSONL, repeated header names become\n"
"NAME.1, NAME.2 ... (as pandas reads them), so keys never repeat.\n"
"A text longer than the model's maximum length is classified over\n"
"overlapping windows of that length (the mean of their logits); a sentence\n"
"pair is truncated.  The summary on standard error counts both.\n"
"\n"
"Exit status: 0 success (rows with input errors included), 1 usage error,\n"
"2 bad model (also when the model fails on a row, e.g. a NaN or infinite\n"
"score: the row gets an error), unreadable or malformed input (complete\n"
"rows are written).\n"
"\n"
"Examples:\n"
"  " PROG " --column review reviews.csv > labelled.csv\n"
"  " PROG " --model models/mnli --column premise --pair-column hypothesis \\\n"
"      --all-scores pairs.csv\n"
"  cut -d, -f3 data.csv | " PROG " --no-header --column 1 --format jsonl -\n");
}

static long parse_num(const char *opt, const char *v, long min)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < min) {
        fprintf(stderr, PROG ": %s needs a number >= %ld, not '%s'\n", opt,
                min, v);
        exit(EXIT_USAGE);
    }
    return n;
}

/* Loads the model, opens the files, starts the reader thread and classifies
 * what it reads; every early return leaves the resources in *a for
 * app_cleanup(). */
static int run(app *a)
{
    /* model */
    if (!(a->m = app_load_model(PROG, &a->model_dir, "sentiment",
                                "sentiment", BERT_TASK_SEQUENCE)))
        return EXIT_BADINPUT;
    const bert_config *cfg = bert_model_config(a->m);
    if (!bert_model_tokenizer(a->m)) {
        fprintf(stderr, PROG ": %s: the model has no tokenizer\n",
                a->model_dir);
        return EXIT_BADINPUT;
    }
    a->C = cfg->num_labels;
    if (app_long_params(PROG, a->m, a->long_truncate, a->long_stride,
                        &a->longw))
        return EXIT_USAGE;
    a->fn = bert_model_function(a->m);
    if (a->top_k > a->C)
        a->top_k = a->C;
    if (!(a->s = app_session(PROG, a->m, a->model_dir, a->threads)))
        return EXIT_BADINPUT;
    reader *rd = &a->rd;
    rd->a = a;
    rd->win = a->win;
    rd->h = &a->h;
    rd->buf = malloc(1 << 16);
    a->win[0].rows = calloc(a->window, sizeof(row));
    a->win[1].rows = calloc(a->window, sizeof(row));
    a->texts = calloc(a->window, sizeof *a->texts);
    a->pairs = calloc(a->window, sizeof *a->pairs);
    a->lens = calloc(a->window, sizeof *a->lens);
    a->pair_lens = calloc(a->window, sizeof *a->pair_lens);
    a->res = calloc(a->window, sizeof *a->res);
    a->scores = calloc(a->window * a->C, sizeof *a->scores);
    a->order = calloc(a->C, sizeof *a->order);
    if (!rd->buf || !a->win[0].rows || !a->win[1].rows || !a->texts ||
        !a->pairs || !a->lens || !a->pair_lens || !a->res || !a->scores ||
        !a->order) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_BADINPUT;
    }

    /* files */
    if (strcmp(a->in_path, "-") == 0) {
        rd->in = stdin;
        a->fname = "<stdin>";
    } else {
        rd->in = fopen(a->in_path, "rb");
        a->fname = a->in_path;
        if (!rd->in) {
            fprintf(stderr, PROG ": %s: %s\n", a->in_path, strerror(errno));
            return EXIT_BADINPUT;
        }
    }
    struct stat st;
    a->in_size = fstat(fileno(rd->in), &st) == 0 && S_ISREG(st.st_mode)
                     ? (long long)st.st_size : -1;
    if (a->out_path) {
        a->out = app_create(a->out_path, a->out_tmp);
        if (!a->out) {
            fprintf(stderr, PROG ": %s: %s\n", a->out_path, strerror(errno));
            return EXIT_BADINPUT;
        }
    } else {
        a->out = stdout;
    }
    static char obuf[1 << 16];
    setvbuf(a->out, obuf, _IOFBF, sizeof obuf);
    a->progress = app_progress_ok();
    a->t0 = app_now();

    /* the reader starts with window 0; the main thread waits for it */
    if (csv_init(&rd->p, CSV_STRICT | CSV_STRICT_FINI)) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_BADINPUT;
    }
    rd->csv_ready = 1;
    csv_set_space_func(&rd->p, no_space); /* spaces belong to the field */
    int e = pthread_mutex_init(&a->h.mu, NULL);
    if (e == 0 && (e = pthread_cond_init(&a->h.cv, NULL)) != 0)
        pthread_mutex_destroy(&a->h.mu);
    a->h_ready = e == 0;
    window_begin(rd, 0);
    if (e == 0)
        e = pthread_create(&a->rd_thread, NULL, reader_main, rd);
    if (e != 0) {
        fprintf(stderr, PROG ": cannot start the reader thread: %s\n",
                strerror(e));
        return EXIT_BADINPUT;
    }

    int status = classify_stream(a);
    pthread_join(a->rd_thread, NULL);

    if (a->nmodel_errors)
        status = EXIT_BADINPUT;
    if (!status && !a->no_header && !rd->header_done) {
        fprintf(stderr, PROG ": %s: empty input (no header row)\n", a->fname);
        status = EXIT_BADINPUT;
    }
    /* --out: flushed, fsynced and renamed over the file only when whole */
    if (a->out == stdout ? fflush(a->out) != 0
                         : app_commit(a->out, a->out_tmp, a->out_path) != 0) {
        fprintf(stderr, PROG ": %s: write error: %s\n",
                a->out_path ? a->out_path : "<stdout>", strerror(errno));
        status = EXIT_BADINPUT;
    }
    draw_progress(a, 1);
    double el = app_now() - a->t0;
    fprintf(stderr, PROG ": %s: %lld rows, %lld with errors, %.1f s "
            "(%.0f rows/s)\n", a->fname, a->nwritten, a->nerrors, el,
            el > 0 ? (double)a->nwritten / el : 0.0);
    char where[4200];
    snprintf(where, sizeof where, "%s: ", a->fname);
    app_long_summary(PROG, where, "row", a->nwindowed, a->ntruncated,
                     &a->longw);
    return status;
}

/* Frees whatever run() acquired, however far it got (the reader thread has
 * ended: run() joins it before returning, or never started it). */
static void app_cleanup(app *a)
{
    reader *rd = &a->rd;
    for (size_t j = 0; a->keys && j < rd->header.nf; j++)
        free(a->keys[j]);
    free(a->keys);
    free(a->keylen);
    if (rd->csv_ready)
        csv_free(&rd->p);
    if (rd->in && rd->in != stdin)
        fclose(rd->in);
    for (int k = 0; k < 2; k++) {
        window *w = &a->win[k];
        for (size_t i = 0; w->rows && i < a->window; i++)
            row_free(&w->rows[i]);
        free(w->rows);
        free(w->msg);
    }
    if (a->h_ready) {
        pthread_cond_destroy(&a->h.cv);
        pthread_mutex_destroy(&a->h.mu);
    }
    row_free(&rd->header);
    free(rd->buf);
    free(a->texts);
    free(a->pairs);
    free(a->lens);
    free(a->pair_lens);
    free(a->res);
    free(a->scores);
    free(a->order);
    bert_session_free(a->s);
    bert_model_free(a->m);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"column", required_argument, NULL, 'c'},
        {"pair-column", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"all-scores", no_argument, NULL, 'a'},
        {"top-k", required_argument, NULL, 'k'},
        {"format", required_argument, NULL, 'f'},
        {"batch", required_argument, NULL, 'b'},
        {"window", required_argument, NULL, 'w'},
        {"threads", required_argument, NULL, 't'},
        {"precision", required_argument, NULL, 'R'},
        {"no-header", no_argument, NULL, 'H'},
        {"prefix", required_argument, NULL, 'P'},
        {"truncate", no_argument, NULL, 'T'},
        {"stride", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    app A;
    memset(&A, 0, sizeof A);
    app *a = &A;
    a->batch = 32;
    a->top_k = 1;
    a->threads = 1;
    a->rd.pcol = -1;
    int opt;
    a->prefix = "";
    while ((opt = getopt_long(argc, argv, "m:c:p:o:ak:f:b:w:t:HhVP:", longopts,
                              NULL)) != -1) {
        switch (opt) {
        case 'm': a->model_dir = optarg; break;
        case 'c': a->col_spec = optarg; break;
        case 'p': a->pcol_spec = optarg; break;
        case 'o': a->out_path = optarg; break;
        case 'a': a->all_scores = 1; break;
        case 'k': a->top_k = (size_t)parse_num("--top-k", optarg, 1); break;
        case 'b': a->batch = (size_t)parse_num("--batch", optarg, 1); break;
        case 'w': a->window = (size_t)parse_num("--window", optarg, 1); break;
        case 'H': a->no_header = 1; break;
        case 'P': a->prefix = optarg; break;
        case 'T': a->long_truncate = 1; break;
        case 'S': a->long_stride = optarg; break;
        case 'f':
            if (strcmp(optarg, "csv") == 0)
                a->jsonl = 0;
            else if (strcmp(optarg, "jsonl") == 0)
                a->jsonl = 1;
            else {
                fprintf(stderr, PROG ": --format is csv or jsonl, not '%s'\n",
                        optarg);
                return EXIT_USAGE;
            }
            break;
        default: {
            int st = app_option(PROG, opt, optarg, &a->threads, usage);
            if (st >= 0)
                return st;
        }
        }
    }
    if (!a->col_spec && a->no_header) {
        fprintf(stderr, PROG ": --column N is required with --no-header.  "
                "Try '" PROG " --help'.\n");
        return EXIT_USAGE;
    }
    if (!a->col_spec) {
        a->col_spec = "text"; /* the header's text column */
        a->col_default = 1;
    }
    for (const char *sp = a->prefix; *sp; sp++)
        if ((unsigned char)*sp < 0x20 || *sp == '"' || *sp == '\\' ||
            *sp == ',' || (unsigned char)*sp >= 0x80) {
            fprintf(stderr, PROG ": --prefix: use ASCII letters, digits and "
                    "punctuation other than '\"', '\\' and ','\n");
            return EXIT_USAGE;
        }
    /* a column number starts at 1, with a header or without */
    const char *specs[2] = {a->col_spec, a->pcol_spec};
    for (int i = 0; i < 2; i++) {
        const char *sp = specs[i];
        if (sp && *sp && strspn(sp, "0123456789") == strlen(sp) &&
            strtoul(sp, NULL, 10) == 0) {
            fprintf(stderr, PROG ": %s: column numbers start at 1, not '%s'\n",
                    i ? "--pair-column" : "--column", sp);
            return EXIT_USAGE;
        }
    }
    if (optind + 1 < argc) {
        fprintf(stderr, PROG ": one input file at most (got %d)\n",
                argc - optind);
        return EXIT_USAGE;
    }
    a->in_path = optind < argc ? argv[optind] : "-";
    if (a->batch > MAX_BATCH) {
        fprintf(stderr, PROG ": --batch needs a number from 1 to %u, not "
                "%zu (memory grows with the rows of a batch)\n", MAX_BATCH,
                a->batch);
        return EXIT_USAGE;
    }
    if (a->window == 0)
        a->window = a->batch <= MAX_ROWS / WINDOW_BATCHES
                        ? a->batch * WINDOW_BATCHES : MAX_ROWS;
    if (a->window < a->batch) {
        /* a window holds whole batches: a smaller one would silently cap
         * --batch */
        fprintf(stderr, PROG ": --window (%zu) must be at least --batch "
                "(%zu)\n", a->window, a->batch);
        return EXIT_USAGE;
    }
    if (a->window > MAX_ROWS)
        a->window = MAX_ROWS;
    if (a->no_header) {
        a->rd.col = resolve(NULL, a->col_spec);
        a->rd.pcol = a->pcol_spec ? resolve(NULL, a->pcol_spec) : -1;
        if (a->rd.col < 0 || (a->pcol_spec && a->rd.pcol < 0)) {
            fprintf(stderr, PROG ": with --no-header, columns are numbers "
                    "from 1\n");
            return EXIT_USAGE;
        }
    }

    int status = run(a);
    app_cleanup(a);
    return status;
}
