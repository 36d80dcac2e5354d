/* fuzz_tokfiles.c - libFuzzer target for the tokenizer files loader
 * (bert_tokenizer_load): the input holds up to three files separated by
 * the line "----8<----": vocab.txt, tokenizer.json, tokenizer_config.json
 * (an empty part: the file is absent), written to a fresh directory and
 * loaded; a loaded tokenizer then encodes a fixed text with a pair and
 * max_length 16.  Any input must load or fail with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/bert_tokenizer.h"

static const char SEP[] = "\n----8<----\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64];
    static const char *const names[3] = {"vocab.txt", "tokenizer.json",
                                         "tokenizer_config.json"};
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_tokfiles.%ld", (long)getpid());
        mkdir(dir, 0700);
    }
    const uint8_t *p = data, *end = data + size;
    char path[128];
    for (int i = 0; i < 3; i++) {
        const uint8_t *q = p;
        size_t sl = sizeof SEP - 1;
        while (q + sl <= end && memcmp(q, SEP, sl) != 0)
            q++;
        if (q + sl > end)
            q = end;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
        if (q > p) {
            FILE *f = fopen(path, "wb");
            if (!f)
                abort();
            fwrite(p, 1, (size_t)(q - p), f);
            fclose(f);
        }
        p = q + sl < end ? q + sl : end;
    }
    bert_tokenizer *t;
    bert_error err;
    err.text[0] = '\0';
    if (bert_tokenizer_load(dir, &t, &err) == BERT_OK) {
        bert_encoding *e = bert_encoding_create();
        bert_encode_params ep = bert_encode_default_params();
        ep.max_length = 16;
        static const char a[] = "Héllo, wörld! [MASK] 東京 don't", b[] = "a pair";
        bert_tokenizer_encode(t, a, sizeof a - 1, b, sizeof b - 1, &ep, e, &err);
        ep.max_length = 0;
        bert_tokenizer_encode(t, a, sizeof a - 1, NULL, 0, &ep, e, &err);
        bert_encoding_free(e);
        bert_tokenizer_free(t);
    } else if (!err.text[0]) {
        abort();
    }
    return 0;
}
