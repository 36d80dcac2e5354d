/*
 * bert-classify - classify one column of a CSV file with a BERT sequence
 * classification model, streaming.
 *
 * The CSV goes through libcsv's push parser (strict RFC 4180: quotes,
 * embedded newlines, CRLF or LF; a UTF-8 BOM is skipped).  Input is fed one
 * physical line at a time so every record knows the line it starts on.
 * Complete records are collected into a batch of --batch rows; the batch is
 * tokenized, run as one packed bert_session_run, and written out in input
 * order with the appended columns.  Only one batch is ever held, so memory
 * stays flat whatever the file size.
 *
 * Every input row gives one output row.  A row whose text cannot be
 * classified (missing column, invalid UTF-8, ...) gets an empty label and
 * the reason in the `error` column.  A malformed CSV (a stray quote, or a
 * quoted field still open at end of file) stops the run with exit code 2
 * after every complete row before it has been written.
 */
#include "apps/common.h"

#include <csv.h>
#include <errno.h>
#include <getopt.h>
#include <libbert/bert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "bert-classify"
#define MAX_ERRORS_SHOWN 20

/* One CSV record: its fields back to back in buf. */
typedef struct row {
    char *buf;
    size_t len, cap;
    size_t *foff, *flen;
    size_t nf, fcap;
    long line;              /* physical line the record starts on */
    long long rowno;        /* 1-based data row */
    int ok;                 /* classified */
    size_t res;             /* index of its result in the batch */
    size_t tok_off, tok_n;  /* its tokens in the batch buffers */
    char err[320];
} row;

typedef struct app {
    /* options */
    const char *model_dir, *col_spec, *pcol_spec, *out_path, *in_path;
    int all_scores, jsonl, no_header, threads;
    size_t top_k, batch;
    /* input */
    FILE *in, *out;
    const char *fname;
    long long in_size;      /* bytes, -1 unknown */
    long long consumed;
    struct csv_parser p;
    long line, pending_line;
    /* records */
    row header;
    int header_done, have_first, crlf;
    size_t width;
    long col, pcol;         /* 0-based, -1 none */
    row *rows;
    size_t nrows;
    long long nrecords, nerrors;
    int fatal;              /* exit code to stop with, 0 = fine */
    int csv_ready;          /* csv_init succeeded: csv_free needed */
    /* model */
    bert_model *m;
    bert_session *s;
    const bert_tokenizer *tok;
    bert_encoding *enc;
    size_t C, maxlen;
    bert_function fn;
    int32_t *ids, *tids;
    size_t ids_cap, tids_cap;
    bert_input *inputs;
    float *logits, *scores;
    size_t *order;
    /* progress */
    int progress;
    double t0, last_draw;
} app;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

static void write_header(app *a)
{
    FILE *f = a->out;
    if (a->no_header)
        return;
    if (a->jsonl)
        return; /* jsonl keys come from the header; nothing to write */
    for (size_t j = 0; j < a->header.nf; j++) {
        put_field(f, a->header.buf + a->header.foff[j], a->header.flen[j]);
        putc(',', f);
    }
    fputs("label,score", f);
    for (size_t k = 2; k <= a->top_k; k++)
        fprintf(f, ",label_%zu,score_%zu", k, k);
    if (a->all_scores)
        for (size_t c = 0; c < a->C; c++) {
            putc(',', f);
            size_t ln = strlen(label_name(a, c));
            char *h = xrealloc(NULL, ln + 7);
            memcpy(h, "score_", 6);
            memcpy(h + 6, label_name(a, c), ln + 1);
            put_str(f, h);
            free(h);
        }
    fputs(",error", f);
    fputs(a->crlf ? "\r\n" : "\n", f);
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

static void write_row_csv(app *a, const row *r)
{
    FILE *f = a->out;
    size_t nf = r->nf > a->width ? r->nf : a->width;
    for (size_t j = 0; j < nf; j++) {
        if (j < r->nf)
            put_field(f, r->buf + r->foff[j], r->flen[j]);
        putc(',', f);
    }
    if (r->ok) {
        const float *sc = a->scores + r->res * a->C;
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
    fputs(a->crlf ? "\r\n" : "\n", f);
}

static void write_row_jsonl(app *a, const row *r)
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
            if (j < a->header.nf) {
                app_json_string(f, a->header.buf + a->header.foff[j],
                                a->header.flen[j]);
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
    if (r->ok) {
        const float *sc = a->scores + r->res * a->C;
        rank(a, sc);
        const char *l = label_name(a, a->order[0]);
        fputs("\"label\":", f);
        app_json_string(f, l, strlen(l));
        fprintf(f, ",\"score\":%.9g", (double)sc[a->order[0]]);
        if (a->top_k > 1) {
            fputs(",\"top_k\":[", f);
            for (size_t k = 0; k < a->top_k; k++) {
                l = label_name(a, a->order[k]);
                fputs(k ? ",{\"label\":" : "{\"label\":", f);
                app_json_string(f, l, strlen(l));
                fprintf(f, ",\"score\":%.9g}", (double)sc[a->order[k]]);
            }
            putc(']', f);
        }
        if (a->all_scores) {
            fputs(",\"scores\":{", f);
            for (size_t c = 0; c < a->C; c++) {
                l = label_name(a, c);
                if (c)
                    putc(',', f);
                app_json_string(f, l, strlen(l));
                fprintf(f, ":%.9g", (double)sc[c]);
            }
            putc('}', f);
        }
        fputs(",\"error\":null}\n", f);
    } else {
        fputs("\"label\":null,\"score\":null,\"error\":", f);
        app_json_string(f, r->err, strlen(r->err));
        fputs("}\n", f);
    }
}

/* ---- progress ------------------------------------------------------------ */

static void draw_progress(app *a, int final)
{
    double t = now();
    if (!a->progress || (!final && t - a->last_draw < 0.2))
        return;
    a->last_draw = t;
    double el = t - a->t0, rate = el > 0 ? (double)a->nrecords / el : 0;
    if (final) {
        fputs("\r\033[K", stderr);
        return;
    }
    fprintf(stderr, "\r\033[K%lld rows  %.0f rows/s", a->nrecords, rate);
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

/* ---- classification ------------------------------------------------------ */

static void row_error(app *a, row *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->ok = 0;
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

static const char *col_name(const app *a, long col, char *buf, size_t cap)
{
    if (!a->no_header && (size_t)col < a->header.nf) {
        snprintf(buf, cap, "'%.*s'", (int)(a->header.flen[col] > 60
                                               ? 60 : a->header.flen[col]),
                 a->header.buf + a->header.foff[col]);
    } else {
        snprintf(buf, cap, "%ld", col + 1);
    }
    return buf;
}

/* Tokenizes row r into the batch buffers; 0 on success. */
static int prepare(app *a, row *r)
{
    char cn[80];
    if ((size_t)a->col >= r->nf) {
        row_error(a, r, "no column %s (the row has %zu field%s)",
                  col_name(a, a->col, cn, sizeof cn), r->nf,
                  r->nf == 1 ? "" : "s");
        return -1;
    }
    if (a->pcol >= 0 && (size_t)a->pcol >= r->nf) {
        row_error(a, r, "no pair column %s (the row has %zu field%s)",
                  col_name(a, a->pcol, cn, sizeof cn), r->nf,
                  r->nf == 1 ? "" : "s");
        return -1;
    }
    const char *text = r->buf + r->foff[a->col];
    size_t tlen = r->flen[a->col];
    const char *pair = a->pcol >= 0 ? r->buf + r->foff[a->pcol] : NULL;
    size_t plen = a->pcol >= 0 ? r->flen[a->pcol] : 0;
    size_t v = app_utf8_valid(text, tlen);
    if (v != tlen) {
        row_error(a, r, "invalid UTF-8 in column %s at byte %zu",
                  col_name(a, a->col, cn, sizeof cn), v);
        return -1;
    }
    if (pair && (v = app_utf8_valid(pair, plen)) != plen) {
        row_error(a, r, "invalid UTF-8 in column %s at byte %zu",
                  col_name(a, a->pcol, cn, sizeof cn), v);
        return -1;
    }
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = a->maxlen;
    bert_error err;
    int rc = bert_tokenizer_encode(a->tok, text, tlen, pair, plen, &ep,
                                   a->enc, &err);
    if (rc) {
        row_error(a, r, "%s", err.text[0] ? err.text : bert_strerror(rc));
        return -1;
    }
    return 0;
}

static void copy_tokens(app *a, row *r, size_t *total)
{
    size_t n = a->enc->n;
    grow_to(&a->ids, &a->ids_cap, *total + n, sizeof(int32_t));
    grow_to(&a->tids, &a->tids_cap, *total + n, sizeof(int32_t));
    memcpy(a->ids + *total, a->enc->ids, n * sizeof(int32_t));
    memcpy(a->tids + *total, a->enc->type_ids, n * sizeof(int32_t));
    r->tok_off = *total;
    r->tok_n = n;
    *total += n;
}

static void process_batch(app *a)
{
    size_t total = 0, nvalid = 0;
    for (size_t i = 0; i < a->nrows; i++) {
        row *r = &a->rows[i];
        if (prepare(a, r) == 0) {
            copy_tokens(a, r, &total);
            r->res = nvalid++;
            r->ok = 1;
        }
    }
    if (nvalid) {
        size_t k = 0;
        for (size_t i = 0; i < a->nrows; i++) {
            row *r = &a->rows[i];
            if (!r->ok)
                continue;
            a->inputs[k].ids = a->ids + r->tok_off;
            a->inputs[k].type_ids = a->tids + r->tok_off;
            a->inputs[k].n = r->tok_n;
            k++;
        }
        bert_outputs o = {a->logits, NULL, NULL};
        int rc = bert_session_run(a->s, a->inputs, nvalid, &o);
        if (rc) {
            /* find the culprit: run the rows one at a time */
            for (size_t i = 0; i < a->nrows; i++) {
                row *r = &a->rows[i];
                if (!r->ok)
                    continue;
                bert_outputs o1 = {a->logits + r->res * a->C, NULL, NULL};
                if ((rc = bert_session_run(a->s, &a->inputs[r->res], 1, &o1)))
                    row_error(a, r, "model run failed: %s",
                              bert_session_errmsg(a->s));
            }
        }
        for (size_t i = 0; i < a->nrows; i++) {
            row *r = &a->rows[i];
            if (r->ok)
                bert_apply_function(a->m, a->fn, a->logits + r->res * a->C,
                                    a->scores + r->res * a->C);
        }
    }
    for (size_t i = 0; i < a->nrows; i++) {
        if (a->jsonl)
            write_row_jsonl(a, &a->rows[i]);
        else
            write_row_csv(a, &a->rows[i]);
        row_reset(&a->rows[i]);
    }
    a->nrows = 0;
    if (ferror(a->out)) {
        fprintf(stderr, PROG ": %s: write error: %s\n",
                a->out_path ? a->out_path : "<stdout>", strerror(errno));
        exit(EXIT_BADINPUT);
    }
    draw_progress(a, 0);
}

/* ---- CSV callbacks ------------------------------------------------------- */

static row *current(app *a)
{
    if (!a->no_header && !a->header_done)
        return &a->header;
    return &a->rows[a->nrows];
}

static void on_field(void *s, size_t n, void *data)
{
    app *a = data;
    if (a->fatal)
        return;
    row *r = current(a);
    if (r->nf == 0)
        r->line = a->pending_line;
    row_add(r, s, n);
}

/* Resolves NAME or a 1-based number against the header; -1 if neither. */
static long resolve(const app *a, const char *spec)
{
    if (!a->no_header)
        for (size_t j = 0; j < a->header.nf; j++)
            if (a->header.flen[j] == strlen(spec) &&
                memcmp(a->header.buf + a->header.foff[j], spec,
                       a->header.flen[j]) == 0)
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
    app *a = data;
    if (a->fatal)
        return;
    row *r = current(a);
    if (!a->have_first) {
        a->have_first = 1;
        a->width = r->nf;
        a->crlf = c == '\r';
    }
    if (!a->no_header && !a->header_done) {
        a->header_done = 1;
        a->col = resolve(a, a->col_spec);
        a->pcol = a->pcol_spec ? resolve(a, a->pcol_spec) : -1;
        const char *bad = a->col < 0 ? a->col_spec
                          : (a->pcol_spec && a->pcol < 0) ? a->pcol_spec
                                                          : NULL;
        if (bad) {
            fprintf(stderr, PROG ": %s: line %ld: the header has no column "
                    "'%s' (columns:", a->fname, r->line, bad);
            for (size_t j = 0; j < a->header.nf; j++)
                fprintf(stderr, "%s '%.*s'", j ? "," : "",
                        (int)a->header.flen[j],
                        a->header.buf + a->header.foff[j]);
            fprintf(stderr, ")\n");
            a->fatal = EXIT_BADINPUT;
            return;
        }
        write_header(a);
        return;
    }
    r->rowno = ++a->nrecords;
    a->nrows++;
    if (a->nrows == a->batch)
        process_batch(a);
}

static int no_space(unsigned char c)
{
    (void)c;
    return 0;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " [OPTIONS] --column NAME|N [FILE|-]\n"
"Classify one column of a CSV file with a BERT sequence-classification model\n"
"and write every row back with the columns label, score (and more) appended.\n"
"\n"
"  -m, --model DIR        model directory (default: the bundled sentiment model)\n"
"  -c, --column NAME|N    the text column: a header name or a 1-based number\n"
"  -p, --pair-column NAME|N  second text, for sentence-pair models\n"
"  -o, --output FILE      write here instead of standard output\n"
"  -a, --all-scores       add one score_<label> column per label\n"
"  -k, --top-k K          also write label_2, score_2 ... label_K, score_K\n"
"  -f, --format csv|jsonl output format (default csv)\n"
"  -b, --batch N          rows per model run (default 32)\n"
"  -t, --threads N        threads for the model (default 1)\n"
"  -H, --no-header        the first row is data; columns are numbers\n"
"  -h, --help             this help\n"
"  -V, --version          version\n"
"\n"
"Input: RFC 4180 CSV (quoted fields, embedded newlines and quotes, CRLF or\n"
"LF, optional UTF-8 BOM).  Output: one row per input row, in order.  A row\n"
"that cannot be classified (missing column, invalid UTF-8) keeps its place\n"
"with an empty label and the reason in the error column.  Scores: softmax\n"
"(or sigmoid for multi-label and one-label models), as Hugging Face's\n"
"text-classification pipeline.\n"
"\n"
"Exit status: 0 success (rows with errors included), 1 usage error,\n"
"2 bad model, unreadable or malformed input (complete rows are written).\n"
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

/* Loads the model, opens the files and streams the CSV; every early
 * return leaves the resources in *a for app_cleanup(). */
static int run(app *a)
{
    /* model */
    if (!(a->m = app_load_model(PROG, &a->model_dir, "sentiment",
                                "sentiment", BERT_TASK_SEQUENCE)))
        return EXIT_BADINPUT;
    const bert_config *cfg = bert_model_config(a->m);
    a->tok = bert_model_tokenizer(a->m);
    if (!a->tok) {
        fprintf(stderr, PROG ": %s: the model has no tokenizer\n",
                a->model_dir);
        return EXIT_BADINPUT;
    }
    a->C = cfg->num_labels;
    a->maxlen = bert_model_max_length(a->m);
    a->fn = bert_model_function(a->m);
    if (a->top_k > a->C)
        a->top_k = a->C;
    if (!(a->s = app_session(PROG, a->m, a->model_dir, a->threads)))
        return EXIT_BADINPUT;
    a->enc = bert_encoding_create();
    a->rows = calloc(a->batch, sizeof *a->rows);
    a->inputs = calloc(a->batch, sizeof *a->inputs);
    a->logits = calloc(a->batch * a->C, sizeof *a->logits);
    a->scores = calloc(a->batch * a->C, sizeof *a->scores);
    a->order = calloc(a->C, sizeof *a->order);
    if (!a->enc || !a->rows || !a->inputs || !a->logits || !a->scores ||
        !a->order) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_BADINPUT;
    }

    /* files */
    if (strcmp(a->in_path, "-") == 0) {
        a->in = stdin;
        a->fname = "<stdin>";
    } else {
        a->in = fopen(a->in_path, "rb");
        a->fname = a->in_path;
        if (!a->in) {
            fprintf(stderr, PROG ": %s: %s\n", a->in_path, strerror(errno));
            return EXIT_BADINPUT;
        }
    }
    struct stat st;
    a->in_size = fstat(fileno(a->in), &st) == 0 && S_ISREG(st.st_mode)
                     ? (long long)st.st_size : -1;
    if (a->out_path) {
        a->out = fopen(a->out_path, "wb");
        if (!a->out) {
            fprintf(stderr, PROG ": %s: %s\n", a->out_path, strerror(errno));
            return EXIT_BADINPUT;
        }
    } else {
        a->out = stdout;
    }
    static char obuf[1 << 16];
    setvbuf(a->out, obuf, _IOFBF, sizeof obuf);
    a->progress = isatty(STDERR_FILENO);
    a->t0 = now();

    /* parse, one physical line per csv_parse call */
    if (csv_init(&a->p, CSV_STRICT | CSV_STRICT_FINI)) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_BADINPUT;
    }
    csv_set_space_func(&a->p, no_space); /* spaces belong to the field */
    static char buf[1 << 16];
    size_t n;
    int first = 1, status = EXIT_OK;
    a->csv_ready = 1;
    a->line = 1;
    a->pending_line = 1;
    while (!a->fatal && (n = fread(buf, 1, sizeof buf, a->in)) > 0) {
        size_t i = 0;
        a->consumed += (long long)n;
        if (first) {
            first = 0;
            if (n >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
                i = 3;
        }
        while (i < n && !a->fatal) {
            const char *nl = memchr(buf + i, '\n', n - i);
            size_t end = nl ? (size_t)(nl - buf) + 1 : n;
            if (a->p.pstate == 0)
                a->pending_line = a->line;
            if (csv_parse(&a->p, buf + i, end - i, on_field, on_record, a) !=
                end - i) {
                if (a->nrows)
                    process_batch(a);
                draw_progress(a, 1);
                fprintf(stderr, PROG ": %s: line %ld: malformed CSV (%s); "
                        "stopping after %lld rows\n", a->fname, a->line,
                        csv_strerror(csv_error(&a->p)), a->nrecords);
                a->fatal = EXIT_BADINPUT;
                break;
            }
            if (nl)
                a->line++;
            i = end;
        }
    }
    if (!a->fatal && ferror(a->in)) {
        fprintf(stderr, PROG ": %s: read error: %s\n", a->fname,
                strerror(errno));
        a->fatal = EXIT_BADINPUT;
    }
    if (!a->fatal) {
        if (csv_fini(&a->p, on_field, on_record, a) != 0) {
            if (a->nrows)
                process_batch(a);
            draw_progress(a, 1);
            fprintf(stderr, PROG ": %s: line %ld: unterminated quoted field "
                    "(still open at end of file); stopping after %lld rows\n",
                    a->fname, a->pending_line, a->nrecords);
            a->fatal = EXIT_BADINPUT;
        } else if (a->nrows) {
            process_batch(a);
        }
    }
    status = a->fatal;
    if (!a->fatal && !a->no_header && !a->header_done)
        fprintf(stderr, PROG ": %s: empty input (no header row)\n", a->fname);
    if (fflush(a->out) != 0 || (a->out != stdout && fclose(a->out) != 0)) {
        fprintf(stderr, PROG ": %s: write error: %s\n",
                a->out_path ? a->out_path : "<stdout>", strerror(errno));
        status = EXIT_BADINPUT;
    }
    draw_progress(a, 1);
    double el = now() - a->t0;
    fprintf(stderr, PROG ": %s: %lld rows, %lld with errors, %.1f s "
            "(%.0f rows/s)\n", a->fname, a->nrecords, a->nerrors, el,
            el > 0 ? (double)a->nrecords / el : 0.0);

    return status;
}

/* Frees whatever run() acquired, however far it got. */
static void app_cleanup(app *a)
{
    if (a->csv_ready)
        csv_free(&a->p);
    if (a->in && a->in != stdin)
        fclose(a->in);
    for (size_t i = 0; a->rows && i < a->batch; i++)
        row_free(&a->rows[i]);
    row_free(&a->header);
    free(a->rows);
    free(a->inputs);
    free(a->logits);
    free(a->scores);
    free(a->order);
    free(a->ids);
    free(a->tids);
    bert_encoding_free(a->enc);
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
        {"threads", required_argument, NULL, 't'},
        {"no-header", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    app A;
    memset(&A, 0, sizeof A);
    app *a = &A;
    a->batch = 32;
    a->top_k = 1;
    a->threads = 1;
    a->pcol = -1;
    int opt;
    while ((opt = getopt_long(argc, argv, "m:c:p:o:ak:f:b:t:HhV", longopts,
                              NULL)) != -1) {
        switch (opt) {
        case 'm': a->model_dir = optarg; break;
        case 'c': a->col_spec = optarg; break;
        case 'p': a->pcol_spec = optarg; break;
        case 'o': a->out_path = optarg; break;
        case 'a': a->all_scores = 1; break;
        case 'k': a->top_k = (size_t)parse_num("--top-k", optarg, 1); break;
        case 'b': a->batch = (size_t)parse_num("--batch", optarg, 1); break;
        case 't': a->threads = (int)parse_num("--threads", optarg, 1); break;
        case 'H': a->no_header = 1; break;
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
        case 'h': usage(stdout); return EXIT_OK;
        case 'V':
            printf(PROG " (libbert) %s\n", BERT_VERSION_STRING);
            return EXIT_OK;
        default:
            fprintf(stderr, "Try '" PROG " --help'.\n");
            return EXIT_USAGE;
        }
    }
    if (!a->col_spec) {
        fprintf(stderr, PROG ": --column is required.  Try '" PROG
                " --help'.\n");
        return EXIT_USAGE;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, PROG ": one input file at most (got %d)\n",
                argc - optind);
        return EXIT_USAGE;
    }
    a->in_path = optind < argc ? argv[optind] : "-";
    if (a->batch > 1u << 20)
        a->batch = 1u << 20;
    if (a->no_header) {
        a->col = resolve(a, a->col_spec);
        a->pcol = a->pcol_spec ? resolve(a, a->pcol_spec) : -1;
        if (a->col < 0 || (a->pcol_spec && a->pcol < 0)) {
            fprintf(stderr, PROG ": with --no-header, columns are numbers "
                    "from 1\n");
            return EXIT_USAGE;
        }
    }

    int status = run(a);
    app_cleanup(a);
    return status;
}
