/* fuzz_config.c - libFuzzer target for the config.json parser (from a
 * buffer): any bytes must give BERT_OK with sane sizes or an error status,
 * never a crash, leak or absurd allocation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    bert_cfg cfg;
    bert_error err;
    if (bert__config_parse(buf, size, "fuzz", &cfg, &err) == BERT_OK) {
        const bert_config *c = &cfg.pub;
        if (c->layers < 1 || c->layers > BERT_CFG_MAX_LAYERS ||
            c->hidden % c->heads != 0 || !(c->layer_norm_eps > 0))
            abort();
        for (size_t i = 0; i < c->num_labels; i++)
            if (!cfg.labels || !cfg.labels[i])
                abort();
        bert__config_free(&cfg);
    } else if (err.text[0] == '\0') {
        abort(); /* every failure explains itself */
    }
    free(buf);
    return 0;
}
