/* example.c - the smallest complete libbert program: load a sequence
 * classification model, classify the texts given on the command line.
 * Builds against the installed library:
 *
 *   cc example.c $(pkg-config --cflags --libs libbert) -o example
 *   ./example MODEL_DIR "a gorgeous film" "a waste of time"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libbert/bert.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR TEXT...\n", argv[0]);
        return 1;
    }
    bert_model *m;
    bert_error err;
    if (bert_model_load(argv[1], NULL, &m, &err) != BERT_OK) {
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
    for (int i = 2; i < argc; i++) {
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
