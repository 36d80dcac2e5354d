/*
 * bench/bench_tokenizer.c - single-thread tokenizer throughput on a file,
 * line by line (like ../shared/bench/hf-tokenizers in "loop" mode: each
 * '\n'-separated line is one text, no pairs, [CLS]/[SEP] included).
 *
 *   bench_tokenizer MODEL_DIR FILE [PASSES]
 *
 * Prints one JSON line: MB/s (1e6 bytes of input per second) and tokens/s,
 * from the median of PASSES timed passes after one warm-up pass.
 */
#include <libbert/bert_tokenizer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer MODEL_DIR FILE [PASSES]\n");
        return 1;
    }
    int passes = argc > 3 ? atoi(argv[3]) : 5;
    if (passes < 1 || passes > 100)
        passes = 5;
    bert_tokenizer *t;
    bert_error err;
    if (bert_tokenizer_load(argv[1], &t, &err)) {
        fprintf(stderr, "%s\n", err.text);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 2;
    }
    size_t cap = 1 << 24, n = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    bert_encoding *e = bert_encoding_create();
    double times[100];
    size_t tokens = 0, lines = 0, bad = 0;
    for (int p = -1; p < passes; p++) {
        tokens = lines = bad = 0;
        double t0 = now();
        size_t s = 0;
        while (s < n) {
            const char *nl = memchr(buf + s, '\n', n - s);
            size_t end = nl ? (size_t)(nl - buf) : n;
            if (bert_tokenizer_encode(t, buf + s, end - s, NULL, 0, NULL, e, &err))
                bad++;
            tokens += e->n;
            lines++;
            s = end + 1;
        }
        if (p >= 0)
            times[p] = now() - t0;
    }
    qsort(times, (size_t)passes, sizeof times[0], cmp_double);
    double med = times[passes / 2];
    printf("{\"impl\":\"libbert\",\"model\":\"%s\",\"corpus\":\"%s\",\"bytes\":%zu,\"lines\":%zu,"
           "\"tokens\":%zu,\"errors\":%zu,\"passes\":%d,\"median_s\":%.4f,\"min_s\":%.4f,"
           "\"MB_per_s\":%.3f,\"tokens_per_s\":%.0f}\n",
           argv[1], argv[2], n, lines, tokens, bad, passes, med, times[0], n / 1e6 / med,
           tokens / med);
    bert_encoding_free(e);
    bert_tokenizer_free(t);
    free(buf);
    return bad ? 2 : 0;
}
