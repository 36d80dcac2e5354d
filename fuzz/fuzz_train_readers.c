/* fuzz_train_readers.c - libFuzzer target for bert-train's data readers
 * (its CSV, CoNLL and text loaders, compiled in from apps/bert-train.c):
 * the first byte picks the reader and, for CSV, whether a pair column is
 * read and the labels fixed; the rest is the file.  Tokenizer: the
 * vocabulary of $FUZZ_MODEL (default data/sentiment), max length 32.
 * Every input: loaded or refused with exit status 2, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define main train_main
#include "apps/bert-train.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tk_t k;
    static char path[64];
    if (!k.tok) {
        const char *m = getenv("FUZZ_MODEL");
        char vp[4200];
        bert_error err;
        snprintf(vp, sizeof vp, "%s/vocab.txt", m && *m ? m : "data/sentiment");
        if (bert_tokenizer_load_vocab(vp, 1, -1, 1, &k.tok, &err))
            abort();
        k.enc = bert_encoding_create();
        k.max_len = 32;
        k.cls = bert_tokenizer_special(k.tok, BERT_TOKEN_CLS);
        k.sep = bert_tokenizer_special(k.tok, BERT_TOKEN_SEP);
        k.pad = bert_tokenizer_special(k.tok, BERT_TOKEN_PAD);
        k.mask = bert_tokenizer_special(k.tok, BERT_TOKEN_MASK);
        k.unk = bert_tokenizer_special(k.tok, BERT_TOKEN_UNK);
        snprintf(path, sizeof path, "/tmp/fuzz_train.%ld", (long)getpid());
    }
    if (size < 1)
        return 0;
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    opts_t o;
    memset(&o, 0, sizeof o);
    o.text_col = "text";
    o.label_col = "label";
    o.pair_col = data[0] & 4 ? "pair" : NULL;
    o.all_subtokens = (data[0] >> 3) & 1;
    labels_t labs;
    memset(&labs, 0, sizeof labs);
    if (data[0] & 16) {
        label_add(&labs, "O");
        label_add(&labs, "B-PER");
        label_add(&labs, "positive");
        labs.fixed = 1;
    }
    dataset d;
    memset(&d, 0, sizeof d);
    int rc;
    switch (data[0] % 3) {
    case 0: rc = load_csv(path, &o, &k, &labs, &d); break;
    case 1: rc = load_conll(path, &o, &k, &labs, &d); break;
    default: rc = load_text(path, &k, &d); break;
    }
    if (rc != EXIT_OK && rc != EXIT_BADINPUT)
        abort();
    ds_free(&d);
    for (size_t i = 0; i < labs.n; i++)
        free(labs.names[i]);
    free(labs.names);
    return 0;
}
