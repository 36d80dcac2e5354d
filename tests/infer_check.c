/* infer_check.c - checks the JSON-lines output of apps/bert-infer against a
 * fixture's expected.json / expected.safetensors (used by apps_infer.sh).
 *
 *   infer_check [--hidden] [--max-length N] [--embeddings mean|cls
 *               [--normalize]] [--bad K]... [--tol X] [--tol-hidden X]
 *               FIXTURE OUTPUT
 *
 * OUTPUT holds one JSON object per line for FIXTURE/texts.txt, with an
 * invalid line inserted at every input line K given by --bad (1-based, in
 * the input bert-infer read); those lines must be the documented error
 * object {"line":K,"error":"..."}.  Every other line must carry exactly the
 * keys of the CLI contract (issue 3):
 *   sequence models {"ids","logits","probs","label"}
 *   token models    {"ids","logits","labels"}
 *   base models     {"ids","last_hidden_state"} + "pooler_output" (BertModel)
 *   --hidden adds "last_hidden_state" for every model;
 *   --embeddings mean|cls [--normalize]: {"ids","embedding"} for every model
 *     (+ "last_hidden_state" with --hidden), the embedding compared with
 *     expected last_hidden_state pooled here (mean over the example's
 *     tokens, or its first row; divided by max(L2 norm, 1e-12));
 * ids equal to the expected ids; logits, probabilities, pooler_output and
 * last_hidden_state within 1e-4 absolute; labels equal to the expected arg-max
 * (except where expected.json marks the arg-max ambiguous) and to the arg-max
 * of the printed probabilities / logits; every number printed as %.9g of a
 * float would print it.  With --max-length N, examples longer than N must be
 * truncated to N ids (single texts: the first N-1 ids then [SEP]) and only
 * examples that fit are compared by value.  --tol / --tol-hidden replace
 * 1e-4 for logits, probabilities and pooler_output / for hidden states (the
 * reduced precisions' bounds, docs/precision.md); with a tolerance above
 * 1e-4, a label may also differ from the expected one where the expected
 * logits' two largest are within twice the tolerance (it must still be the
 * arg-max of what was printed).
 * Exit 0 when everything matches, 1 otherwise (with a message per problem,
 * at most 20). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert.h"
#include "libbert/safetensors.h"

#define TOL 1e-4

static int n_fail;
static double tol = TOL, tol_hidden = TOL;
static const char *out_path;

static void fail(long line, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(long line, const char *fmt, ...)
{
    if (n_fail++ >= 20)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%ld: ", out_path, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

typedef struct maxdiff {
    double logits, probs, pooler, hidden;
} maxdiff;

static void upd(double *m, double d)
{
    if (d > *m)
        *m = d;
}

/* Every number in the raw line (outside strings) must be what %.9g prints
 * for the float it denotes. */
static void check_number_format(long lno, const char *s)
{
    int bad = 0;
    for (const char *p = s; *p && !bad;) {
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p)
                p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            const char *q = p;
            while (*q && strchr("+-.0123456789eE", *q))
                q++;
            char tok[64], re[64];
            size_t n = (size_t)(q - p);
            if (n >= sizeof tok) {
                fail(lno, "number of %zu characters", n);
                bad = 1;
                break;
            }
            memcpy(tok, p, n);
            tok[n] = '\0';
            snprintf(re, sizeof re, "%.9g", (double)strtof(tok, NULL));
            if (strcmp(tok, re) != 0) {
                fail(lno, "number '%s' is not %%.9g of a float ('%s')", tok,
                     re);
                bad = 1;
            }
            p = q;
        } else {
            p++;
        }
    }
}

/* Compares a JSON array of n numbers with want[0..n); returns 0 if shaped
 * right (values checked against TOL, max diff recorded). */
static int cmp_floats(long lno, const char *what, json_t *a, const double *want,
                      size_t n, double *md, double tl)
{
    if (!json_is_array(a) || json_array_size(a) != n) {
        fail(lno, "%s: expected an array of %zu numbers", what, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_number(v)) {
            fail(lno, "%s[%zu]: not a number", what, i);
            return -1;
        }
        double d = fabs(json_number_value(v) - want[i]);
        if (!(d <= tl)) {
            fail(lno, "%s[%zu] = %.9g, expected %.9g", what, i,
                 json_number_value(v), want[i]);
            return -1;
        }
        upd(md, d);
    }
    return 0;
}

/* With a tolerance above TOL: whether the two largest of x[0..n) are within
 * twice it, so that the arg-max may differ within the tolerance. */
static int close_top2(const double *x, size_t n)
{
    if (tol <= TOL || n < 2)
        return 0;
    double a = -INFINITY, b = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (x[i] > a) {
            b = a;
            a = x[i];
        } else if (x[i] > b) {
            b = x[i];
        }
    }
    return a - b <= 2 * tol;
}

static double *json_doubles(json_t *a, size_t *n)
{
    *n = json_array_size(a);
    double *x = malloc((*n ? *n : 1) * sizeof *x);
    for (size_t i = 0; i < *n; i++)
        x[i] = json_number_value(json_array_get(a, i));
    return x;
}

static size_t argmax_json(json_t *a)
{
    size_t b = 0;
    for (size_t i = 1; i < json_array_size(a); i++)
        if (json_number_value(json_array_get(a, i)) >
            json_number_value(json_array_get(a, b)))
            b = i;
    return b;
}

static int in_int_array(json_t *a, long v)
{
    for (size_t i = 0; i < json_array_size(a); i++)
        if (json_integer_value(json_array_get(a, i)) == v)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int hidden = 0, embed = 0, normalize = 0;
    long max_length = 0;
    long bad[64];
    size_t n_bad = 0;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--hidden") == 0)
            hidden = 1;
        else if (strcmp(argv[i], "--bad") == 0 && i + 1 < argc && n_bad < 64)
            bad[n_bad++] = atol(argv[++i]);
        else if (strcmp(argv[i], "--max-length") == 0 && i + 1 < argc)
            max_length = atol(argv[++i]);
        else if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc)
            tol = atof(argv[++i]);
        else if (strcmp(argv[i], "--tol-hidden") == 0 && i + 1 < argc)
            tol_hidden = atof(argv[++i]);
        else if (strcmp(argv[i], "--embeddings") == 0 && i + 1 < argc)
            embed = strcmp(argv[++i], "cls") == 0 ? 2 : 1;
        else if (strcmp(argv[i], "--normalize") == 0)
            normalize = 1;
        else
            break;
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: infer_check [--hidden] [--max-length N] "
                        "[--embeddings mean|cls [--normalize]] "
                        "[--bad K]... [--tol X] [--tol-hidden X] FIXTURE "
                        "OUTPUT\n");
        return 2;
    }
    const char *fix = argv[i];
    out_path = argv[i + 1];

    char path[8400];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/expected.json", fix);
    json_t *exp = json_load_file(path, JSON_ALLOW_NUL, &jerr);
    if (!exp) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
        return 2;
    }
    const char *arch = json_string_value(json_object_get(exp, "architecture"));
    json_t *examples = json_object_get(exp, "examples");
    json_t *labels = json_object_get(exp, "labels");
    if (!arch || !json_is_array(examples)) {
        fprintf(stderr, "%s: no architecture / examples\n", path);
        return 2;
    }
    int seq = strstr(arch, "ForSequenceClassification") != NULL;
    int tokc = strstr(arch, "ForTokenClassification") != NULL;
    int base = !seq && !tokc;
    int pooler = strcmp(arch, "BertModel") == 0;
    int want_hidden = hidden || (base && !embed);

    snprintf(path, sizeof path, "%s/expected.safetensors", fix);
    bert_st_file st;
    bert_error err;
    if (bert__st_open(path, &st, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 2;
    }
    const bert_st_tensor *ht = bert__st_find(&st, "last_hidden_state");
    if (!ht || ht->ndim != 3) {
        fprintf(stderr, "%s: no last_hidden_state\n", path);
        return 2;
    }
    size_t S = ht->shape[1], H = ht->shape[2];
    float *hid = malloc(ht->nelem * sizeof *hid);
    bert__st_to_f32(ht, hid);

    FILE *f = fopen(out_path, "rb");
    if (!f) {
        perror(out_path);
        return 2;
    }
    size_t n_ex = json_array_size(examples), ex = 0;
    maxdiff md = {0, 0, 0, 0};
    char *buf = NULL;
    size_t cap = 0;
    ssize_t got;
    long lno = 0;
    double *row = malloc((H > 64 ? H : 64) * sizeof *row);
    while ((got = getline(&buf, &cap, f)) != -1) {
        lno++;
        if (got == 0 || buf[got - 1] != '\n')
            fail(lno, "line does not end with a newline");
        else
            buf[--got] = '\0';
        check_number_format(lno, buf);
        json_t *o = json_loads(buf, 0, &jerr);
        if (!json_is_object(o)) {
            fail(lno, "not a JSON object: %s", o ? "" : jerr.text);
            json_decref(o);
            continue;
        }
        int is_bad = 0;
        for (size_t k = 0; k < n_bad; k++)
            is_bad |= bad[k] == lno;
        if (is_bad) {
            json_t *l = json_object_get(o, "line");
            json_t *e = json_object_get(o, "error");
            if (json_object_size(o) != 2 || !json_is_integer(l) ||
                json_integer_value(l) != lno || !json_is_string(e) ||
                !strstr(json_string_value(e), "UTF-8"))
                fail(lno, "expected {\"line\":%ld,\"error\":\"...UTF-8...\"}, "
                          "got %.200s",
                     lno, buf);
            json_decref(o);
            continue;
        }
        if (ex >= n_ex) {
            fail(lno, "more output lines than examples");
            json_decref(o);
            continue;
        }
        json_t *E = json_array_get(examples, ex++);
        json_t *want_ids = json_object_get(E, "input_ids");
        size_t n = json_array_size(want_ids);
        int is_pair = json_is_string(json_object_get(E, "text_pair")) &&
                      json_string_length(json_object_get(E, "text_pair")) > 0;

        /* keys: exactly the contract */
        const char *keys[6];
        size_t nk = 0;
        keys[nk++] = "ids";
        if (embed) {
            keys[nk++] = "embedding";
        } else if (seq) {
            keys[nk++] = "logits";
            keys[nk++] = "probs";
            keys[nk++] = "label";
        } else if (tokc) {
            keys[nk++] = "logits";
            keys[nk++] = "labels";
        }
        if (want_hidden)
            keys[nk++] = "last_hidden_state";
        if (base && pooler && !embed)
            keys[nk++] = "pooler_output";
        int keys_ok = json_object_size(o) == nk;
        for (size_t k = 0; k < nk; k++)
            keys_ok &= json_object_get(o, keys[k]) != NULL;
        if (!keys_ok) {
            fail(lno, "keys differ from the contract (%zu keys): %.200s", nk,
                 buf);
            json_decref(o);
            continue;
        }

        /* ids */
        json_t *ids = json_object_get(o, "ids");
        if (max_length && n > (size_t)max_length) {
            size_t m = json_array_size(ids);
            int ok = m == (size_t)max_length;
            for (size_t t = 0; ok && !is_pair && t + 1 < m; t++)
                ok = json_integer_value(json_array_get(ids, t)) ==
                     json_integer_value(json_array_get(want_ids, t));
            if (ok && !is_pair)
                ok = json_integer_value(json_array_get(ids, m - 1)) ==
                     json_integer_value(json_array_get(want_ids, n - 1));
            if (!ok)
                fail(lno, "not truncated to %ld ids as expected", max_length);
            json_decref(o);
            continue;
        }
        if (!json_equal(ids, want_ids)) {
            fail(lno, "ids differ from expected.json example %zu", ex - 1);
            json_decref(o);
            continue;
        }

        if (embed) {
            /* the expected embedding, pooled from expected rows 0..n-1 */
            for (size_t h = 0; h < H; h++) {
                double acc = 0;
                for (size_t t = 0; t < (embed == 2 ? 1 : n); t++)
                    acc += hid[((ex - 1) * S + t) * H + h];
                row[h] = (float)(embed == 2 ? acc : acc / (double)n);
            }
            if (normalize) {
                double ss = 0;
                for (size_t h = 0; h < H; h++)
                    ss += row[h] * row[h];
                double nr = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
                for (size_t h = 0; h < H; h++)
                    row[h] /= nr;
            }
            cmp_floats(lno, "embedding", json_object_get(o, "embedding"), row,
                       H, &md.pooler, tol_hidden);
        } else if (seq) {
            size_t C;
            double *wl = json_doubles(json_object_get(E, "logits"), &C);
            double *wp = json_doubles(json_object_get(E, "probabilities"), &C);
            json_t *lg = json_object_get(o, "logits");
            json_t *pr = json_object_get(o, "probs");
            cmp_floats(lno, "logits", lg, wl, C, &md.logits, tol);
            cmp_floats(lno, "probs", pr, wp, C, &md.probs, tol);
            json_t *lab = json_object_get(o, "label");
            const char *want =
                json_string_value(json_object_get(E, "predicted_label"));
            if (!json_is_string(lab))
                fail(lno, "label is not a string");
            else if (!json_is_true(json_object_get(E, "ambiguous_argmax")) &&
                     !close_top2(wl, C) &&
                     strcmp(json_string_value(lab), want) != 0)
                fail(lno, "label %s, expected %s", json_string_value(lab),
                     want);
            else if (json_is_array(pr) && json_array_size(pr) == C &&
                     strcmp(json_string_value(lab),
                            json_string_value(json_array_get(
                                labels, argmax_json(pr)))) != 0)
                fail(lno, "label %s is not the arg-max of probs",
                     json_string_value(lab));
            free(wl);
            free(wp);
        } else if (tokc) {
            json_t *wl = json_object_get(E, "logits");
            json_t *wlab = json_object_get(E, "predicted_labels");
            json_t *amb = json_object_get(E, "ambiguous_argmax_tokens");
            json_t *lg = json_object_get(o, "logits");
            json_t *lab = json_object_get(o, "labels");
            if (!json_is_array(lg) || json_array_size(lg) != n ||
                !json_is_array(lab) || json_array_size(lab) != n) {
                fail(lno, "token logits / labels: expected %zu rows", n);
            } else {
                for (size_t t = 0; t < n; t++) {
                    size_t C;
                    double *w = json_doubles(json_array_get(wl, t), &C);
                    char what[64];
                    snprintf(what, sizeof what, "logits[%zu]", t);
                    json_t *r = json_array_get(lg, t);
                    cmp_floats(lno, what, r, w, C, &md.logits, tol);
                    int close = close_top2(w, C);
                    free(w);
                    const char *l = json_string_value(json_array_get(lab, t));
                    if (!l) {
                        fail(lno, "labels[%zu] is not a string", t);
                        continue;
                    }
                    if (!in_int_array(amb, (long)t) && !close &&
                        strcmp(l, json_string_value(
                                      json_array_get(wlab, t))) != 0)
                        fail(lno, "labels[%zu] = %s, expected %s", t, l,
                             json_string_value(json_array_get(wlab, t)));
                    if (json_is_array(r) && json_array_size(r) == C &&
                        strcmp(l, json_string_value(json_array_get(
                                      labels, argmax_json(r)))) != 0)
                        fail(lno, "labels[%zu] = %s is not the arg-max of "
                                  "its logits",
                             t, l);
                }
            }
        }
        if (want_hidden) {
            json_t *hs = json_object_get(o, "last_hidden_state");
            if (!json_is_array(hs) || json_array_size(hs) != n || n > S) {
                fail(lno, "last_hidden_state: expected %zu rows", n);
            } else {
                for (size_t t = 0; t < n; t++) {
                    const float *w = hid + ((ex - 1) * S + t) * H;
                    for (size_t h = 0; h < H; h++)
                        row[h] = w[h];
                    char what[64];
                    snprintf(what, sizeof what, "last_hidden_state[%zu]", t);
                    if (cmp_floats(lno, what, json_array_get(hs, t), row, H,
                                   &md.hidden, tol_hidden))
                        break;
                }
            }
        }
        if (base && pooler && !embed) {
            size_t h;
            double *w = json_doubles(json_object_get(E, "pooler_output"), &h);
            if (h != H)
                fail(lno, "expected.json pooler_output has %zu values", h);
            cmp_floats(lno, "pooler_output", json_object_get(o, "pooler_output"),
                       w, h, &md.pooler, tol);
            free(w);
        }
        json_decref(o);
    }
    if (ex != n_ex || (size_t)lno != n_ex + n_bad)
        fail(lno, "%ld output lines for %zu examples + %zu bad lines", lno,
             n_ex, n_bad);
    if (n_fail > 20)
        fprintf(stderr, "... %d problems in all\n", n_fail);
    printf("%s: %ld lines, max |diff| logits %.3g probs %.3g pooler %.3g "
           "hidden %.3g%s\n",
           out_path, lno, md.logits, md.probs, md.pooler, md.hidden,
           n_fail ? " FAILED" : "");
    fclose(f);
    free(buf);
    free(row);
    free(hid);
    bert__st_close(&st);
    json_decref(exp);
    return n_fail ? 1 : 0;
}
