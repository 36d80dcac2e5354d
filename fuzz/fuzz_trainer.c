/* fuzz_trainer.c - libFuzzer target for the trainer's inputs: its
 * config.json and its resume state.  First byte even: the rest is a
 * config.json for bert_trainer_create (configs over 2M parameters are
 * parsed but not built, to keep the fuzzer's memory bounded); odd: the rest
 * is a trainer_state.bin for bert_trainer_load_state on a tiny fixed model
 * (FUZZ_WRITE_STATE=PATH writes that model's valid state, a seed).  Any
 * input: BERT_OK or an error with a message, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert_train.h"
#include "libbert/config.h"

static const char TINY[] =
    "{\"architectures\": [\"BertForSequenceClassification\"],"
    " \"model_type\": \"bert\", \"vocab_size\": 8, \"hidden_size\": 4,"
    " \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
    " \"intermediate_size\": 4, \"max_position_embeddings\": 8,"
    " \"type_vocab_size\": 2, \"id2label\": {\"0\": \"a\", \"1\": \"b\"}}";

static void put(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char cfg[64], st[64], tiny[64];
    static bert_trainer *t;
    bert_error err;
    if (!t) {
        snprintf(cfg, sizeof cfg, "/tmp/fuzz_trainer.%ld.json", (long)getpid());
        snprintf(st, sizeof st, "/tmp/fuzz_trainer.%ld.bin", (long)getpid());
        snprintf(tiny, sizeof tiny, "/tmp/fuzz_trainer.%ld.tiny", (long)getpid());
        put(tiny, TINY, sizeof TINY - 1);
        if (bert_trainer_create(NULL, tiny, NULL, &t, &err))
            abort();
        const char *seed = getenv("FUZZ_WRITE_STATE");
        if (seed && *seed && bert_trainer_save_state(t, seed, &err))
            abort();
    }
    if (size < 1)
        return 0;
    err.text[0] = '\0';
    if (data[0] & 1) {
        put(st, data + 1, size - 1);
        int rc = bert_trainer_load_state(t, st, &err);
        if (rc != BERT_OK && !err.text[0])
            abort();
        return 0;
    }
    bert_cfg c;
    if (bert__config_parse((const char *)data + 1, size - 1, "fuzz", &c, &err))
        return 0;
    const bert_config *p = &c.pub;
    double n = (double)p->vocab_size * p->hidden +
               (double)p->layers * p->hidden * (4.0 * p->hidden + 2.0 * p->intermediate) +
               (double)p->max_position * p->hidden;
    bert__config_free(&c);
    if (n > 2e6)
        return 0;
    put(cfg, data + 1, size - 1);
    bert_trainer *u;
    int rc = bert_trainer_create(NULL, cfg, NULL, &u, &err);
    if (rc == BERT_OK)
        bert_trainer_free(u);
    else if (!err.text[0])
        abort();
    return 0;
}
