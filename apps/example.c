/* example.c - the smallest complete libbert program: load a sequence
 * classification model (by default the installed sentiment model), classify
 * the texts given on the command line.  Builds against the installed
 * library:
 *
 *   cc example.c $(pkg-config --cflags --libs libbert) -o example \
 *      -Wl,-rpath,$(pkg-config --variable=libdir libbert)
 *   ./example "a gorgeous film" "a waste of time"
 *   ./example --model MODEL_DIR "a gorgeous film"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libbert/bert.h>

int main(int argc, char **argv)
{
    char dir[4096];
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--model") == 0) {
        snprintf(dir, sizeof dir, "%s", argv[2]);
        first = 3;
    } else if (bert_default_model_dir("sentiment", dir, sizeof dir) != BERT_OK) {
        fprintf(stderr, "the default model is not installed (%s)\n", dir);
        return 2;
    }
    if (argc <= first) {
        fprintf(stderr, "usage: %s [--model DIR] TEXT...\n", argv[0]);
        return 1;
    }
    bert_model *m;
    bert_error err;
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
    size_t C = bert_model_config(m)->num_labels;
    float *probs = malloc((C ? C : 1) * sizeof *probs);
    int status = 0;
    for (int i = first; i < argc; i++) {
        int label;
        int rc = bert_classify_text(s, argv[i], strlen(argv[i]), NULL, 0,
                                    probs, C, &label);
        if (rc != BERT_OK) {
            fprintf(stderr, "%s: %s\n", bert_strerror(rc),
                    bert_session_errmsg(s));
            status = 2;
            continue;
        }
        printf("%s\t%.4f\t%s\n", bert_model_label(m, label), probs[label],
               argv[i]);
    }
    free(probs);
    bert_session_free(s);
    bert_model_free(m);
    return status;
}
