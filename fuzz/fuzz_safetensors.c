/* fuzz_safetensors.c - libFuzzer target for the safetensors parser (from a
 * buffer: header length, JSON header, dtypes, shapes, offsets, overlaps),
 * then for the weight binder on what parsed, and the dtype conversions. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/config.h"
#include "libbert/model.h"
#include "libbert/safetensors.h"

/* A tiny BERT whose tensors a fuzzed file may try to provide. */
static const char tiny_cfg[] =
    "{\"architectures\":[\"BertForSequenceClassification\"],"
    "\"model_type\":\"bert\",\"hidden_size\":4,\"num_hidden_layers\":1,"
    "\"num_attention_heads\":2,\"intermediate_size\":8,\"vocab_size\":8,"
    "\"max_position_embeddings\":8,\"type_vocab_size\":2}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copy into an exact-size heap buffer so ASan sees any overread. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    bert_st_file f;
    bert_error err;
    if (bert__st_parse(buf, size, "fuzz", &f, &err) == BERT_OK) {
        for (size_t i = 0; i < f.n_tensors; i++) {
            const bert_st_tensor *t = &f.tensors[i];
            if (bert__st_find(&f, t->name) != t)
                abort(); /* lookup must find every tensor */
            if (t->nelem <= 4096) {
                float tmp[4096];
                int64_t itmp[4096];
                bert__st_to_f32(t, tmp);
                bert__st_to_i64(t, itmp);
            }
        }
        bert_cfg cfg;
        if (bert__config_parse(tiny_cfg, sizeof tiny_cfg - 1, "cfg", &cfg,
                               &err) == BERT_OK) {
            bert_weights w;
            float *conv = NULL;
            if (bert__weights_bind(&cfg, &f, "fuzz", &w, &conv, &err) ==
                BERT_OK)
                free(w.layers);
            free(conv);
            bert__config_free(&cfg);
        }
        bert__st_close(&f);
    }
    free(buf);
    return 0;
}
