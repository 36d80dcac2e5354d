/* fuzz_train_readers.c - libFuzzer target for bert-train's data loading
 * (bert_dataset_load over the CSV, CoNLL and text readers): the first byte
 * picks the task (so the reader) and, for CSV, whether a pair column is
 * read, whether every sub-token is labelled and whether the labels are
 * fixed; the rest is the file.  Tokenizer: the vocabulary of $FUZZ_MODEL
 * (default data/sentiment), max length 32.  Every input: loaded or refused
 * with a status and a message, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "libbert/bert_train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bert_tokenizer *tok;
    static char path[64];
    static const char *const fixed[] = {"O", "B-PER", "positive"};
    if (!tok) {
        const char *m = getenv("FUZZ_MODEL");
        char vp[4200];
        bert_error err;
        snprintf(vp, sizeof vp, "%s/vocab.txt", m && *m ? m : "data/sentiment");
        if (bert_tokenizer_load_vocab(vp, 1, -1, 1, &tok, &err))
            abort();
        snprintf(path, sizeof path, "/tmp/fuzz_train.%ld", (long)getpid());
    }
    if (size < 1)
        return 0;
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    static const bert_train_task tasks[3] = {
        BERT_TRAIN_SEQUENCE, BERT_TRAIN_TOKEN, BERT_TRAIN_MLM};
    bert_dataset_params p = bert_dataset_default_params();
    p.task = tasks[data[0] % 3];
    p.max_length = 32;
    p.pair_column = data[0] & 4 ? "pair" : NULL;
    p.label_all_subtokens = (data[0] >> 3) & 1;
    if (data[0] & 16) {
        p.labels = fixed;
        p.num_labels = 3;
    }
    bert_dataset *d = NULL;
    bert_error err;
    int rc = bert_dataset_load(path, tok, &p, &d, &err);
    if ((rc == BERT_OK) != (d != NULL) || (rc && !err.text[0]))
        abort();
    bert_dataset_free(d);
    return 0;
}
