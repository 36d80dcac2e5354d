/* bert-infer - run a BERT / DistilBERT / RoBERTa / ELECTRA model on stdin
 * lines, JSON out.
 *
 *   bert-infer --model DIR [--max-length N] [--hidden] [--threads N]
 *              [--batch N]
 *
 * One text per stdin line (only '\n' ends a line; a TAB makes a sentence
 * pair: text before the first TAB, pair after it; an empty pair means no
 * pair).  One JSON object per input line, in order:
 *   sequence models  {"ids":[...],"logits":[...],"probs":[...],"label":"..."}
 *   token models     {"ids":[...],"logits":[[...],...],"labels":[...]}
 *   base models      {"ids":[...],"last_hidden_state":[[...],...]} plus
 *                    "pooler_output" when the model has a pooler
 *   --hidden         adds "last_hidden_state" for every model.
 *   --embeddings cls|mean [--normalize]
 *                    instead: {"ids":[...],"embedding":[...]}, the sentence
 *                    embedding (bert_pool: the [CLS] row or the mean of the
 *                    last hidden state, optionally L2-normalised, as
 *                    sentence-transformers), for any model.
 * Floats are printed with %.9g (round-trips float32); a non-finite value
 * prints as null.  Texts longer than --max-length (default: the model's
 * maximum) are truncated as Hugging Face does (longest_first).
 * A line that is not valid UTF-8 (or fails otherwise) gives
 *   {"line":N,"error":"..."}
 * in its place, so output line N always answers input line N; the exit
 * status is then 2 after all lines are processed.
 * Exit status: 0 success, 1 usage error, 2 bad model or bad input.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/common.h"
#include "libbert/bert.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bert-infer --model DIR [--max-length N] [--hidden] "
            "[--threads N] [--batch N] [--jsonl]\n"
            "                  [--embeddings cls|mean [--normalize]]\n"
            "Reads one text per line on stdin (TAB separates a sentence "
            "pair) and writes one JSON object per line:\n"
            "  sequence models: ids, logits, probs, label\n"
            "  token models:    ids, logits (one row per token), labels\n"
            "  base models:     ids, last_hidden_state (+ pooler_output)\n"
            "Options:\n"
            "  --model DIR       Hugging Face model directory (config.json, "
            "model.safetensors, vocab)\n"
            "  --max-length N    truncate to N tokens (default: the model's "
            "maximum)\n"
            "  --hidden          also print last_hidden_state\n"
            "  --embeddings cls|mean\n"
            "                    print the sentence embedding instead of the "
            "head's outputs:\n"
            "                    {\"ids\":[...],\"embedding\":[...]}, the "
            "[CLS] row or the mean of\n"
            "                    the last hidden state (sentence-transformers "
            "pooling)\n"
            "  --normalize       with --embeddings: L2-normalise each "
            "embedding\n"
            "  --threads N       threads for matrix products (default 1)\n"
            "  --precision P     fp32 (default, exact), bf16 or int8 (results\n"
            "                    move slightly: docs/precision.md)\n"
            "  --batch N         lines per model run (default 16)\n"
            "  --jsonl           read JSON Lines: {\"text\": ..., "
            "\"text_pair\": ...} per line\n"
            "                    (texts may hold TABs and newlines)\n"
            "  --help, --version\n"
            "Exit status: 0 ok, 1 usage, 2 bad model or input (bad lines "
            "print {\"line\":N,\"error\":...}).\n"
            "\nExamples:\n"
            "  echo 'a wonderful film' | bert-infer --model data/sentiment\n"
            "  bert-infer --model DIR --batch 32 --threads 2 < texts.txt > "
            "out.jsonl\n"
            "  printf 'premise\\thypothesis\\n' | bert-infer --model "
            "models/mnli\n");
}

/* ---- JSON output ---------------------------------------------------------- */

static void json_floats(FILE *f, const float *x, size_t n)
{
    putc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            putc(',', f);
        if (isfinite(x[i]))
            fprintf(f, "%.9g", (double)x[i]);
        else
            fputs("null", f);
    }
    putc(']', f);
}

static void json_rows(FILE *f, const float *x, size_t rows, size_t cols)
{
    putc('[', f);
    for (size_t r = 0; r < rows; r++) {
        if (r)
            putc(',', f);
        json_floats(f, x + r * cols, cols);
    }
    putc(']', f);
}

static void json_ids(FILE *f, const int32_t *ids, size_t n)
{
    putc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", (int)ids[i]);
    putc(']', f);
}

static size_t argmax(const float *x, size_t n)
{
    size_t b = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* ---- main ----------------------------------------------------------------- */

typedef struct line {
    char *text;
    size_t len;
    long no;             /* 1-based input line */
    int ok;              /* encoded (and, after the run, scored) */
    size_t slot, row;    /* its input of the run, its first output row */
    char error[600];
    bert_encoding *enc;
} line;

static int parse_num(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (!*s || *end || errno || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

int main(int argc, char **argv)
{
    const char *model_dir = NULL;
    long max_length = 0, threads = 1, batch = 16;
    int hidden = 0, jsonl = 0, embed = 0, normalize = 0;
    bert_pooling pooling = BERT_POOL_MEAN;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--version") == 0) {
            printf("bert-infer (libbert) %s\n", BERT_VERSION_STRING);
            return EXIT_OK;
        } else if (strcmp(a, "--hidden") == 0) {
            hidden = 1;
        } else if (strcmp(a, "--jsonl") == 0) {
            jsonl = 1;
        } else if (strcmp(a, "--normalize") == 0) {
            normalize = 1;
        } else if (i + 1 < argc && strcmp(a, "--embeddings") == 0) {
            const char *v = argv[++i];
            if (strcmp(v, "cls") && strcmp(v, "mean")) {
                fprintf(stderr, "bert-infer: --embeddings needs cls or mean\n");
                return EXIT_USAGE;
            }
            embed = 1;
            pooling = strcmp(v, "cls") == 0 ? BERT_POOL_CLS : BERT_POOL_MEAN;
        } else if (i + 1 < argc && strcmp(a, "--model") == 0) {
            model_dir = argv[++i];
        } else if (i + 1 < argc && strcmp(a, "--max-length") == 0) {
            if (parse_num(argv[++i], 3, 1 << 20, &max_length)) {
                fprintf(stderr, "bert-infer: --max-length needs an integer "
                                ">= 3\n");
                return EXIT_USAGE;
            }
        } else if (i + 1 < argc && strcmp(a, "--precision") == 0) {
            if (app_set_precision("bert-infer", argv[++i]))
                return EXIT_USAGE;
        } else if (i + 1 < argc && strcmp(a, "--threads") == 0) {
            int th = app_parse_threads("bert-infer", argv[++i]);
            if (th < 0)
                return EXIT_USAGE;
            threads = th;
        } else if (i + 1 < argc && strcmp(a, "--batch") == 0) {
            if (parse_num(argv[++i], 1, 4096, &batch)) {
                fprintf(stderr, "bert-infer: --batch needs 1..4096\n");
                return EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "bert-infer: unknown or incomplete option '%s'\n",
                    a);
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (!model_dir) {
        fprintf(stderr, "bert-infer: --model DIR is required\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    if (normalize && !embed) {
        fprintf(stderr, "bert-infer: --normalize needs --embeddings\n");
        return EXIT_USAGE;
    }

    bert_error err;
    bert_model *m = NULL;
    bert_model_params mp = bert_model_default_params();
    if (app_kernels("bert-infer", &mp.kernels) ||
        app_precision("bert-infer", &mp.precision))
        return EXIT_USAGE;
    int rc = bert_model_load(model_dir, &mp, &m, &err);
    if (rc != BERT_OK) {
        fprintf(stderr, "bert-infer: %s\n", err.text);
        return EXIT_BADINPUT;
    }
    size_t mml = bert_model_max_length(m);
    if (max_length == 0)
        max_length = (long)mml;
    if ((size_t)max_length > mml) {
        fprintf(stderr,
                "bert-infer: --max-length %ld exceeds the model's maximum "
                "%zu\n",
                max_length, mml);
        bert_model_free(m);
        return EXIT_USAGE;
    }
    bert_session_params sp = bert_session_default_params();
    sp.n_threads = (int)threads;
    sp.kernels = mp.kernels;
    bert_session *s = NULL;
    if ((rc = bert_session_create(m, &sp, &s, &err)) != BERT_OK) {
        fprintf(stderr, "bert-infer: %s\n", err.text);
        bert_model_free(m);
        return EXIT_BADINPUT;
    }
    const bert_config *c = bert_model_config(m);
    const bert_tokenizer *tok = bert_model_tokenizer(m);
    size_t H = c->hidden, C = embed ? 0 : c->num_labels;
    int want_hidden = hidden || embed || c->task == BERT_TASK_BASE;
    int want_pooler =
        !embed && c->task == BERT_TASK_BASE && bert_model_has_pooler(m);
    /* with --embeddings, the hidden states are run for the pooling and
     * printed only with --hidden */
    int print_hidden = hidden || (!embed && c->task == BERT_TASK_BASE);

    line *L = calloc((size_t)batch, sizeof *L);
    bert_input *in = calloc((size_t)batch, sizeof *in);
    size_t *rowof = calloc((size_t)batch, sizeof *rowof);
    size_t cap_rows = (size_t)batch * (size_t)max_length;
    float *hid = want_hidden ? malloc(cap_rows * H * sizeof *hid) : NULL;
    float *pool = want_pooler ? malloc((size_t)batch * H * sizeof *pool) : NULL;
    float *logits = C ? malloc(cap_rows * C * sizeof *logits) : NULL;
    float *probs = C ? malloc(C * sizeof *probs) : NULL;
    float *emb = embed ? malloc(H * sizeof *emb) : NULL;
    int status = EXIT_OK, fatal = 0;
    if (!L || !in || !rowof || (want_hidden && !hid) || (want_pooler && !pool) ||
        (C && (!logits || !probs)) || (embed && !emb)) {
        fprintf(stderr, "bert-infer: out of memory\n");
        fatal = 1;
    }
    for (long i = 0; !fatal && i < batch; i++)
        if (!(L[i].enc = bert_encoding_create())) {
            fprintf(stderr, "bert-infer: out of memory\n");
            fatal = 1;
        }
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = (size_t)max_length;

    char *buf = NULL;
    size_t bcap = 0;
    long lineno = 0;
    int eof = 0;
    while (!fatal && !eof) {
        size_t nb = 0;
        /* Read and tokenize up to `batch` lines. */
        while (nb < (size_t)batch) {
            long n = app_read_line(stdin, &buf, &bcap);
            if (n == -1) {
                eof = 1;
                break;
            }
            if (n < 0) {
                fprintf(stderr, "bert-infer: out of memory reading line %ld\n",
                        lineno + 1);
                fatal = 1;
                break;
            }
            line *l = &L[nb++];
            l->no = ++lineno;
            l->ok = 0;
            size_t len = (size_t)n;
            size_t bad = bert_utf8_valid(buf, len);
            if (bad < len) {
                snprintf(l->error, sizeof l->error,
                         "line %ld: invalid UTF-8 at byte %zu", l->no, bad);
                continue;
            }
            const char *text = buf, *pair = NULL;
            size_t tlen = len, plen = 0;
            void *own = NULL;
            if (jsonl) {
                char msg[300];
                if (app_jsonl_parse(buf, len, &own, &text, &tlen, &pair,
                                    &plen, msg, sizeof msg)) {
                    snprintf(l->error, sizeof l->error, "line %ld: %s", l->no,
                             msg);
                    continue;
                }
            } else {
                char *tab = memchr(buf, '\t', len);
                if (tab) {
                    tlen = (size_t)(tab - buf);
                    pair = tab + 1;
                    plen = len - tlen - 1;
                }
            }
            rc = bert_tokenizer_encode(tok, text, tlen, pair, plen, &ep,
                                       l->enc, &err);
            app_jsonl_free(own);
            if (rc != BERT_OK) {
                snprintf(l->error, sizeof l->error, "line %ld: %s", l->no,
                         err.text);
                continue;
            }
            l->ok = 1;
        }
        if (fatal || nb == 0)
            break;
        /* One model run for the good lines. */
        size_t ni = 0, rows = 0;
        for (size_t i = 0; i < nb; i++) {
            if (!L[i].ok)
                continue;
            in[ni].ids = L[i].enc->ids;
            in[ni].type_ids = L[i].enc->type_ids;
            in[ni].n = L[i].enc->n;
            rowof[ni] = rows;
            L[i].slot = ni;
            L[i].row = rows;
            rows += L[i].enc->n;
            ni++;
        }
        if (ni) {
            bert_outputs out = {logits, pool, hid};
            rc = bert_session_run(s, in, ni, &out, NULL);
            /* A failed run (one bad line fails the whole batch): each line
             * alone, into its own place of the outputs, so that only the
             * bad lines get an error and line N still answers line N. */
            for (size_t i = 0; rc != BERT_OK && i < nb; i++) {
                line *l = &L[i];
                if (!l->ok)
                    continue;
                bert_outputs one = {
                    logits ? logits + (c->task == BERT_TASK_TOKEN ? l->row
                                                                  : l->slot) * C
                           : NULL,
                    pool ? pool + l->slot * H : NULL,
                    hid ? hid + l->row * H : NULL};
                bert_error e;
                int r1 = bert_session_run(s, &in[l->slot], 1, &one, &e);
                if (r1 != BERT_OK) {
                    snprintf(l->error, sizeof l->error, "line %ld: %s: %s",
                             l->no, bert_strerror(r1), e.text);
                    l->ok = 0;
                }
            }
        }
        /* Print in input order. */
        for (size_t i = 0; i < nb; i++) {
            line *l = &L[i];
            if (!l->ok) {
                printf("{\"line\":%ld,\"error\":", l->no);
                app_json_string(stdout, l->error, strlen(l->error));
                fputs("}\n", stdout);
                status = EXIT_BADINPUT;
                continue;
            }
            size_t n = l->enc->n, r0 = l->row, k = l->slot;
            fputs("{\"ids\":", stdout);
            json_ids(stdout, l->enc->ids, n);
            if (embed) {
                bert_pool(hid + r0 * H, n, H, pooling, normalize, emb, NULL);
                fputs(",\"embedding\":", stdout);
                json_floats(stdout, emb, H);
            } else if (c->task == BERT_TASK_SEQUENCE) {
                const float *lg = logits + k * C;
                bert_apply_function(m, BERT_FUNC_DEFAULT, lg, probs);
                fputs(",\"logits\":", stdout);
                json_floats(stdout, lg, C);
                fputs(",\"probs\":", stdout);
                json_floats(stdout, probs, C);
                fputs(",\"label\":", stdout);
                const char *lab = bert_model_label(m, (int)argmax(probs, C));
                app_json_string(stdout, lab, strlen(lab));
            } else if (c->task == BERT_TASK_TOKEN) {
                const float *lg = logits + r0 * C;
                fputs(",\"logits\":", stdout);
                json_rows(stdout, lg, n, C);
                fputs(",\"labels\":[", stdout);
                for (size_t t = 0; t < n; t++) {
                    if (t)
                        putchar(',');
                    const char *lab =
                        bert_model_label(m, (int)argmax(lg + t * C, C));
                    app_json_string(stdout, lab, strlen(lab));
                }
                putchar(']');
            }
            if (print_hidden) {
                fputs(",\"last_hidden_state\":", stdout);
                json_rows(stdout, hid + r0 * H, n, H);
            }
            if (want_pooler) {
                fputs(",\"pooler_output\":", stdout);
                json_floats(stdout, pool + k * H, H);
            }
            fputs("}\n", stdout);
        }
        if (ferror(stdout)) {
            fprintf(stderr, "bert-infer: write error: %s\n", strerror(errno));
            status = EXIT_BADINPUT;
            break;
        }
    }
    if (fatal && status == EXIT_OK)
        status = EXIT_BADINPUT;
    free(buf);
    for (long i = 0; L && i < batch; i++)
        bert_encoding_free(L[i].enc);
    free(L);
    free(in);
    free(rowof);
    free(hid);
    free(pool);
    free(logits);
    free(probs);
    free(emb);
    bert_session_free(s);
    bert_model_free(m);
    /* (a write error seen in the loop was reported there) */
    if (!ferror(stdout) && fflush(stdout) != 0) {
        fprintf(stderr, "bert-infer: write error: %s\n", strerror(errno));
        status = EXIT_BADINPUT;
    }
    return status;
}
