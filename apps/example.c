/* example.c - a complete libbert program: load a model (by default an
 * installed one) and run it on the texts given on the command line, all at
 * once through the batched calls:
 *   (default)  classify them (bert_classify_batch): label, probability, text;
 *   --tag      tag named entities (bert_tag_batch, the "ner" model): text
 *              number, entity group, score, words;
 *   --embed    sentence embeddings (bert_embed_texts, mean pooling, L2
 *              normalised): cosine similarity to the first text, text.
 * Builds against the installed library:
 *
 *   cc example.c $(pkg-config --cflags --libs libbert) -o example \
 *      -Wl,-rpath,$(pkg-config --variable=libdir libbert)
 *   ./example "a gorgeous film" "a waste of time"
 *   ./example --tag "John Smith flew to Paris"
 *   ./example --embed "a gorgeous film" "a great movie" "a waste of time"
 *   ./example --model MODEL_DIR "a gorgeous film"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libbert/bert.h>

/* Each text's label and probability, in input order. */
static int classify(bert_session *s, const bert_model *m,
                    const char *const *texts, size_t n)
{
    size_t C = bert_model_config(m)->num_labels;
    bert_classify_result *res = calloc(n, sizeof *res);
    float *probs = calloc(n * C, sizeof *probs);
    bert_error err;
    int status = 0;
    /* NULL lens: NUL-terminated texts; NULL params: batches of 32 */
    if (!res || !probs ||
        bert_classify_batch(s, texts, NULL, NULL, NULL, n, NULL, res, NULL,
                            probs, n * C, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", res && probs ? err.text : "out of memory");
        status = 2;
    }
    for (size_t i = 0; i < n && !status; i++) {
        if (res[i].status != BERT_OK) { /* that text alone failed */
            fprintf(stderr, "text %zu: %s\n", i + 1, res[i].error.text);
            status = 2;
            continue;
        }
        printf("%s\t%.4f\t%s\n", bert_model_label(m, res[i].label),
               probs[i * C + res[i].label], texts[i]);
    }
    free(res);
    free(probs);
    return status;
}

/* Each text's entities (words grouped by B-/I- tags, as HF's "simple"). */
static int tag(bert_session *s, const char *const *texts, size_t n)
{
    bert_tag_result **res = calloc(n, sizeof *res);
    bert_error *errs = calloc(n, sizeof *errs), err;
    int status = 0;
    for (size_t i = 0; res && i < n; i++)
        if (!(res[i] = bert_tag_result_create()))
            status = 2;
    bert_tag_params p = bert_tag_default_params();
    p.aggregation = BERT_AGG_SIMPLE;
    if (!res || !errs || status ||
        bert_tag_batch(s, texts, NULL, n, &p, res, errs, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", res && errs && !status ? err.text
                                                       : "out of memory");
        status = 2;
    }
    for (size_t i = 0; i < n && !status; i++) {
        if (errs[i].status != BERT_OK) {
            fprintf(stderr, "text %zu: %s\n", i + 1, errs[i].text);
            status = 2;
            continue;
        }
        for (size_t k = 0; k < res[i]->n; k++) {
            const bert_entity *e = &res[i]->entities[k];
            printf("%zu\t%s\t%.4f\t%s\n", i + 1, e->entity, e->score,
                   e->word);
        }
    }
    for (size_t i = 0; res && i < n; i++)
        bert_tag_result_free(res[i]);
    free(res);
    free(errs);
    return status;
}

/* Cosine similarity of each text to the first: the dot product of their
 * normalised embeddings. */
static int embed(bert_session *s, const bert_model *m,
                 const char *const *texts, size_t n)
{
    size_t H = bert_model_config(m)->hidden;
    float *v = calloc(n * H, sizeof *v);
    bert_embed_params p = bert_embed_default_params();
    p.pooling = BERT_POOL_MEAN;
    p.normalize = 1;
    bert_error err;
    if (!v || bert_embed_texts(s, texts, NULL, NULL, NULL, n, &p, v, n * H,
                               &err) != BERT_OK) {
        fprintf(stderr, "%s\n", v ? err.text : "out of memory");
        free(v);
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        double dot = 0;
        for (size_t h = 0; h < H; h++)
            dot += (double)v[h] * v[i * H + h];
        printf("%.4f\t%s\n", dot, texts[i]);
    }
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    enum { CLASSIFY, TAG, EMBED } mode = CLASSIFY;
    const char *model = NULL;
    char dir[4096];
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--tag") == 0)
            mode = TAG;
        else if (strcmp(argv[first], "--embed") == 0)
            mode = EMBED;
        else if (strcmp(argv[first], "--model") == 0 && first + 1 < argc)
            model = argv[++first];
        else
            break;
    }
    if (argc <= first) {
        fprintf(stderr, "usage: %s [--tag|--embed] [--model DIR] TEXT...\n",
                argv[0]);
        return 1;
    }
    bert_error err;
    if (model) {
        snprintf(dir, sizeof dir, "%s", model);
    } else if (bert_default_model_dir(mode == TAG ? "ner" : "sentiment", dir,
                                      sizeof dir, &err) != BERT_OK) {
        fprintf(stderr, "the default model is not installed: %s\n",
                err.text);
        return 2;
    }
    bert_model *m;
    if (bert_model_load(dir, NULL, &m, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 2;
    }
    bert_session *s;
    if (bert_session_create(m, NULL, &s, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        bert_model_free(m);
        return 2;
    }
    const char *const *texts = (const char *const *)argv + first;
    size_t n = (size_t)(argc - first);
    int status = mode == TAG     ? tag(s, texts, n)
                 : mode == EMBED ? embed(s, m, texts, n)
                                 : classify(s, m, texts, n);
    bert_session_free(s);
    bert_model_free(m);
    return status;
}
