/* fuzz_tag_aggregate.c - libFuzzer target for bert_tag_aggregate (the
 * token-classification post-processing): the bytes give the aggregation,
 * the number of labels (1-5, from B-PER I-PER O B-LOC I-LOC), the tokens
 * (id, special flag, code-point and byte offsets, which may be anything:
 * the function must refuse offsets outside the text) and their logits; the
 * text is the remaining bytes.  Any input: BERT_OK or an error with a
 * message, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert.h"

static const char *const LABELS[5] = {"B-PER", "I-PER", "O", "B-LOC", "I-LOC"};
static const char *const TOKS[4] = {"an", "##gela", "[UNK]", ""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bert_tag_result *r;
    if (!r)
        r = bert_tag_result_create();
    if (size < 3)
        return 0;
    bert_tag_params p = bert_tag_default_params();
    p.aggregation = (bert_aggregation)(data[0] % 6); /* 5: invalid */
    size_t C = 1 + data[1] % 5, n = data[2] % 32, per = 4 + C;
    data += 3;
    size -= 3;
    if (size < n * per)
        n = size / per;
    int32_t ids[32], special[32];
    const char *tokens[32];
    int64_t off[64], boff[64];
    float logits[32 * 5];
    const uint8_t *textp = data + n * per;
    size_t len = size - n * per;
    for (size_t t = 0; t < n; t++) {
        const uint8_t *d = data + t * per;
        ids[t] = d[0] % 8;
        special[t] = d[0] >> 7;
        tokens[t] = TOKS[d[0] % 4];
        off[2 * t] = d[1] % 64;
        off[2 * t + 1] = off[2 * t] + d[2] % 8;
        boff[2 * t] = d[1] % 64;
        boff[2 * t + 1] = boff[2 * t] + d[3] % 8;
        for (size_t c = 0; c < C; c++)
            logits[t * C + c] = ((float)d[4 + c] - 128.0f) / 16.0f;
    }
    char *text = malloc(len ? len : 1);
    memcpy(text, textp, len);
    bert_tag_tokens in = {text, len, n, ids, tokens, off, boff, special,
                          logits, C, LABELS, 2};
    bert_error err;
    err.text[0] = '\0';
    int rc = bert_tag_aggregate(&in, &p, r, &err);
    if (rc != BERT_OK && !err.text[0])
        abort();
    for (size_t i = 0; rc == BERT_OK && i < r->n; i++)
        if ((uint64_t)r->entities[i].byte_end > len)
            abort();
    free(text);
    return 0;
}
