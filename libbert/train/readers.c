/* readers.c - the training data readers (contracts in bert_train.h): CSV
 * with a header (text[,text_pair],label columns, parsed by libcsv), CoNLL
 * (token<TAB>tag lines, blank lines between sentences) and plain text (one
 * text per line).  Records come out one at a time, in file order, so that a
 * caller that checks labels or tokenizes as it goes reports the first
 * problem of the file, whichever kind it is. */
#include <csv.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert_train.h"
#include "libbert/internal.h"
#include "libbert/readall.h"

struct bert_reader {
    bert_data_format format;
    char *path;
    /* CSV: every row parsed at open (libcsv is a push parser over the whole
     * buffer, and a malformed file is refused before any record) */
    char ***rows;
    size_t *rown;
    size_t nrows, caprows, next_row;
    int ti, pi, li; /* column indexes (pi -1: no pair) */
    /* CoNLL and text: the file, read line by line */
    FILE *f;
    char *line;
    size_t cap;
    long lineno;
    int eof;
    char **words, **tags; /* the sentence being returned (CoNLL) */
    size_t nw, cw;
};

bert_reader_params bert_reader_default_params(void)
{
    bert_reader_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.format = BERT_DATA_CSV;
    p.text_column = "text";
    p.pair_column = NULL;
    p.label_column = "label";
    return p;
}

/* ---- CSV ---------------------------------------------------------------- */

/* libcsv's callbacks collect rows of NUL-terminated fields. */
typedef struct {
    char **f;
    size_t n, cap;
    bert_reader *r;
    int oom;
} csv_acc;

static void csv_cb1(void *s, size_t len, void *vc)
{
    csv_acc *c = vc;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 8;
        char **nb = realloc(c->f, nc * sizeof *nb);
        if (!nb) {
            c->oom = 1;
            return;
        }
        c->f = nb;
        c->cap = nc;
    }
    char *d = malloc(len + 1);
    if (!d) {
        c->oom = 1;
        return;
    }
    memcpy(d, s ? s : "", s ? len : 0);
    d[s ? len : 0] = 0;
    c->f[c->n++] = d;
}

static void csv_cb2(int ch, void *vc)
{
    csv_acc *c = vc;
    bert_reader *r = c->r;
    (void)ch;
    if (r->nrows == r->caprows) {
        size_t nc = r->caprows ? r->caprows * 2 : 1024;
        char ***nr = realloc(r->rows, nc * sizeof *nr);
        if (nr)
            r->rows = nr;
        size_t *nn = realloc(r->rown, nc * sizeof *nn);
        if (nn)
            r->rown = nn;
        if (!nr || !nn) {
            c->oom = 1;
            return;
        }
        r->caprows = nc;
    }
    r->rows[r->nrows] = c->f;
    r->rown[r->nrows] = c->n;
    r->nrows++;
    c->f = NULL;
    c->n = c->cap = 0;
}

/* The whole file at path into *buf (*len bytes); errno on failure. */
static int slurp(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    int rc = bert__read_all(f, 0, buf, len);
    fclose(f);
    if (rc != BERT_OK)
        errno = rc == BERT_ENOMEM ? ENOMEM : EIO;
    return rc == BERT_OK ? 0 : -1;
}

static int col_index(char **hdr, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(hdr[i], name) == 0)
            return (int)i;
    return -1;
}

static int open_csv(bert_reader *r, const bert_reader_params *p,
                    bert_error *err)
{
    char *buf;
    size_t len;
    if (slurp(r->path, &buf, &len))
        return bert__err(err, errno == ENOMEM ? BERT_ENOMEM : BERT_EIO,
                         "%s: %s", r->path, strerror(errno));
    struct csv_parser parser;
    csv_acc c;
    memset(&c, 0, sizeof c);
    c.r = r;
    if (csv_init(&parser, CSV_APPEND_NULL)) {
        free(buf);
        return bert__err(err, BERT_ENOMEM, "%s: out of memory", r->path);
    }
    size_t done = csv_parse(&parser, buf, len, csv_cb1, csv_cb2, &c);
    int bad = done != len;
    int why = bad ? csv_error(&parser) : 0;
    csv_fini(&parser, csv_cb1, csv_cb2, &c);
    csv_free(&parser);
    free(buf);
    for (size_t i = 0; i < c.n; i++) /* a row left open by an error */
        free(c.f[i]);
    free(c.f);
    if (c.oom)
        return bert__err(err, BERT_ENOMEM, "%s: out of memory", r->path);
    if (bad)
        return bert__err(err, BERT_EFORMAT, "%s: malformed CSV (%s)", r->path,
                         csv_strerror(why));
    if (r->nrows < 1)
        return bert__err(err, BERT_EFORMAT,
                         "%s: empty file (a CSV with a header row %s,%s is "
                         "needed)",
                         r->path, p->text_column, p->label_column);
    r->ti = col_index(r->rows[0], r->rown[0], p->text_column);
    r->pi = p->pair_column ? col_index(r->rows[0], r->rown[0], p->pair_column)
                           : -1;
    r->li = col_index(r->rows[0], r->rown[0], p->label_column);
    if (r->ti < 0 || r->li < 0 || (p->pair_column && r->pi < 0))
        return bert__err(err, BERT_EFORMAT, "%s: header lacks column '%s'",
                         r->path,
                         r->ti < 0   ? p->text_column
                         : r->li < 0 ? p->label_column
                                     : p->pair_column);
    r->next_row = 1;
    return BERT_OK;
}

static int next_csv(bert_reader *r, bert_record *rec, bert_error *err)
{
    while (r->next_row < r->nrows) {
        size_t row = r->next_row++;
        size_t nf = r->rown[row];
        char **f = r->rows[row];
        if (nf == 1 && f[0][0] == 0)
            continue; /* an empty line */
        if ((size_t)r->ti >= nf || (size_t)r->li >= nf ||
            (r->pi >= 0 && (size_t)r->pi >= nf))
            return bert__err(err, BERT_EFORMAT, "%s: record %zu has %zu fields",
                             r->path, row + 1, nf);
        memset(rec, 0, sizeof *rec);
        rec->text = f[r->ti];
        rec->text_len = strlen(f[r->ti]);
        if (r->pi >= 0) {
            rec->pair = f[r->pi];
            rec->pair_len = strlen(f[r->pi]);
        }
        rec->label = f[r->li];
        rec->line = (long)(row + 1);
        return 1;
    }
    return 0;
}

/* ---- CoNLL and text ------------------------------------------------------ */

/* One line without its '\n' into r->line (NUL-terminated; it may hold NUL
 * bytes): its length, -1 at the end of the file, -2 out of memory.  Only
 * '\n' ends a line. */
static long read_line(bert_reader *r)
{
    size_t n = 0;
    int c;
    while ((c = getc(r->f)) != EOF) {
        if (n + 1 >= r->cap) {
            size_t nc = r->cap ? r->cap * 2 : 4096;
            char *nb = realloc(r->line, nc);
            if (!nb)
                return -2;
            r->line = nb;
            r->cap = nc;
        }
        if (c == '\n')
            break;
        r->line[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return -1;
    r->line[n] = '\0';
    return (long)n;
}

static void free_sentence(bert_reader *r)
{
    for (size_t i = 0; i < r->nw; i++) {
        free(r->words[i]);
        free(r->tags[i]);
    }
    r->nw = 0;
}

static int next_conll(bert_reader *r, bert_record *rec, bert_error *err)
{
    free_sentence(r);
    while (!r->eof) {
        long n = read_line(r);
        r->lineno++;
        if (n == -2)
            return bert__err(err, BERT_ENOMEM, "%s:%ld: out of memory",
                             r->path, r->lineno);
        if (n == -1)
            r->eof = 1;
        if (n <= 0) {
            if (!r->nw)
                continue;
            /* a blank line (or the end of the file) ends the sentence */
            memset(rec, 0, sizeof *rec);
            rec->n_words = r->nw;
            rec->words = (const char *const *)r->words;
            rec->tags = (const char *const *)r->tags;
            rec->line = r->lineno;
            return 1;
        }
        char *tab = strchr(r->line, '\t');
        if (!tab)
            return bert__err(err, BERT_EFORMAT,
                             "%s:%ld: expected token<TAB>tag", r->path,
                             r->lineno);
        *tab = 0;
        char *tag = tab + 1;
        char *tab2 = strchr(tag, '\t'); /* further columns are ignored */
        if (tab2)
            *tab2 = 0;
        if (r->nw == r->cw) {
            size_t nc = r->cw ? r->cw * 2 : 64;
            char **a = realloc(r->words, nc * sizeof *a);
            if (a)
                r->words = a;
            char **b = realloc(r->tags, nc * sizeof *b);
            if (b)
                r->tags = b;
            if (!a || !b)
                return bert__err(err, BERT_ENOMEM, "%s:%ld: out of memory",
                                 r->path, r->lineno);
            r->cw = nc;
        }
        char *w = strdup(r->line), *t = strdup(tag);
        if (!w || !t) {
            free(w);
            free(t);
            return bert__err(err, BERT_ENOMEM, "%s:%ld: out of memory",
                             r->path, r->lineno);
        }
        r->words[r->nw] = w;
        r->tags[r->nw] = t;
        r->nw++;
    }
    return 0;
}

static int next_text(bert_reader *r, bert_record *rec, bert_error *err)
{
    if (r->eof)
        return 0;
    long n = read_line(r);
    if (n == -1) {
        r->eof = 1;
        return 0;
    }
    r->lineno++;
    if (n == -2)
        return bert__err(err, BERT_ENOMEM, "%s:%ld: out of memory", r->path,
                         r->lineno);
    memset(rec, 0, sizeof *rec);
    rec->text = r->line;
    rec->text_len = (size_t)n;
    rec->line = r->lineno;
    return 1;
}

/* ---- the public API ------------------------------------------------------ */

int bert_reader_open(const char *path, const bert_reader_params *params,
                     bert_reader **out, bert_error *err)
{
    if (!out)
        return bert__err(err, BERT_EINVAL, "bert_reader_open: out is NULL");
    *out = NULL;
    bert_reader_params p;
    if (BERT__PARAMS(p, params, bert_reader_default_params, err))
        return BERT_EINVAL;
    if (!path)
        return bert__err(err, BERT_EINVAL, "bert_reader_open: path is NULL");
    if (p.format != BERT_DATA_CSV && p.format != BERT_DATA_CONLL &&
        p.format != BERT_DATA_TEXT)
        return bert__err(err, BERT_EINVAL, "bert_reader_open: unknown format %d",
                         (int)p.format);
    if (p.format == BERT_DATA_CSV && (!p.text_column || !p.label_column))
        return bert__err(err, BERT_EINVAL,
                         "bert_reader_open: the CSV text and label columns "
                         "must be named");
    bert_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return bert__err(err, BERT_ENOMEM, "out of memory");
    }
    r->format = p.format;
    int rc = BERT_OK;
    if (p.format == BERT_DATA_CSV) {
        rc = open_csv(r, &p, err);
    } else if (!(r->f = fopen(path, "rb"))) {
        rc = bert__err(err, errno == ENOMEM ? BERT_ENOMEM : BERT_EIO, "%s: %s",
                       path, strerror(errno));
    }
    if (rc != BERT_OK) {
        bert_reader_free(r);
        return rc;
    }
    *out = r;
    return BERT_OK;
}

int bert_reader_next(bert_reader *r, bert_record *rec, bert_error *err)
{
    if (!r || !rec)
        return bert__err(err, BERT_EINVAL, "bert_reader_next: NULL argument");
    switch (r->format) {
    case BERT_DATA_CSV: return next_csv(r, rec, err);
    case BERT_DATA_CONLL: return next_conll(r, rec, err);
    default: return next_text(r, rec, err);
    }
}

void bert_reader_free(bert_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nrows; i++) {
        for (size_t j = 0; j < r->rown[i]; j++)
            free(r->rows[i][j]);
        free(r->rows[i]);
    }
    free(r->rows);
    free(r->rown);
    free_sentence(r);
    free(r->words);
    free(r->tags);
    free(r->line);
    if (r->f)
        fclose(r->f);
    free(r->path);
    free(r);
}
