/* bert-mkmodel - writes a random-weight BERT sequence-classification model
 * directory (config.json + model.safetensors, F32), for load-time and memory
 * measurements.  Not installed.
 *
 *   bert-mkmodel OUTDIR [--vocab DIR] [--hidden 768] [--layers 12]
 *                [--heads 12] [--intermediate 3072] [--max-position 512]
 *                [--labels 2] [--seed 1]
 *
 * --vocab DIR copies DIR/vocab.txt (and tokenizer_config.json when present)
 * and sets vocab_size from it; default vocab_size is 30522 with no vocab.
 * The weights and config.json are bert-bench's random models
 * (bench/random_model.h: uniform with std 0.02, LayerNorm weights around 1,
 * streamed to disk tensor by tensor); this tool adds the sizes and the
 * vocabulary.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/random_model.h"

static int copy_file(const char *from, const char *to, size_t *lines)
{
    FILE *a = fopen(from, "rb"), *b;
    if (!a)
        return -1;
    if (!(b = fopen(to, "wb"))) {
        fclose(a);
        return -1;
    }
    char buf[65536];
    size_t n, nl = 0, last = '\n';
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) {
        for (size_t i = 0; i < n; i++)
            nl += buf[i] == '\n';
        last = (unsigned char)buf[n - 1];
        fwrite(buf, 1, n, b);
    }
    fclose(a);
    int bad = fclose(b) != 0;
    if (lines)
        *lines = nl + (last != '\n');
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    size_t H = 768, L = 12, NH = 12, I = 3072, P = 512, C = 2, V = 30522;
    unsigned long seed = 1;
    const char *out = NULL, *vocab = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t *dst = NULL;
        if (i + 1 < argc) {
            if (!strcmp(a, "--hidden"))
                dst = &H;
            else if (!strcmp(a, "--layers"))
                dst = &L;
            else if (!strcmp(a, "--heads"))
                dst = &NH;
            else if (!strcmp(a, "--intermediate"))
                dst = &I;
            else if (!strcmp(a, "--max-position"))
                dst = &P;
            else if (!strcmp(a, "--labels"))
                dst = &C;
            else if (!strcmp(a, "--seed")) {
                seed = strtoul(argv[++i], NULL, 10);
                continue;
            } else if (!strcmp(a, "--vocab")) {
                vocab = argv[++i];
                continue;
            }
        }
        if (dst) {
            *dst = (size_t)strtoul(argv[++i], NULL, 10);
            continue;
        }
        if (a[0] == '-' || out) {
            fprintf(stderr, "usage: bert-mkmodel OUTDIR [--vocab DIR] "
                            "[--hidden N] [--layers N] [--heads N] "
                            "[--intermediate N] [--max-position N] "
                            "[--labels N] [--seed N]\n");
            return a[0] == '-' && strcmp(a, "--help") == 0 ? 0 : 1;
        }
        out = a;
    }
    if (!out || !H || !L || !NH || H % NH || !I || !P || !C) {
        fprintf(stderr, "bert-mkmodel: need OUTDIR and sane sizes\n");
        return 1;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        perror(out);
        return 2;
    }
    char path[4096];
    if (vocab) {
        char from[4096];
        snprintf(from, sizeof from, "%s/vocab.txt", vocab);
        snprintf(path, sizeof path, "%s/vocab.txt", out);
        if (copy_file(from, path, &V) != 0) {
            fprintf(stderr, "bert-mkmodel: cannot copy %s\n", from);
            return 2;
        }
        snprintf(from, sizeof from, "%s/tokenizer_config.json", vocab);
        snprintf(path, sizeof path, "%s/tokenizer_config.json", out);
        copy_file(from, path, NULL);
    }

    /* The weights and config.json: bert-bench's random-model writer */
    bench_shape sh = {"custom", 0, (int)L, (int)H, (int)NH, (int)I, V, P, C};
    char err[512];
    if (bench_write_random_model(out, &sh, seed, err, sizeof err)) {
        fprintf(stderr, "bert-mkmodel: %s\n", err);
        return 2;
    }
    struct stat st;
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    printf("%s: %.1f MB model.safetensors (H=%zu L=%zu NH=%zu I=%zu P=%zu "
           "V=%zu C=%zu)\n", out, stat(path, &st) ? 0.0 : (double)st.st_size / 1e6,
           H, L, NH, I, P, V, C);
    return 0;
}
