/*
 * fuzz/driver.c - runs a libFuzzer target on the files named on the
 * command line (without libFuzzer), so `make check` replays the seed
 * corpora and past crashes under the normal compiler and sanitizers.
 * Reusable by every fuzz target: link it with fuzz/fuzz_<target>.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            bad = 1;
            continue;
        }
        size_t cap = 4096, n = 0, r;
        uint8_t *buf = malloc(cap);
        while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
            n += r;
            if (n == cap) {
                uint8_t *nb = realloc(buf, cap * 2);
                if (!nb)
                    break;
                buf = nb;
                cap *= 2;
            }
        }
        fclose(f);
        if (!buf) {
            fprintf(stderr, "%s: out of memory\n", argv[i]);
            return 1;
        }
        /* exact-size copy: the target must not read past `n` bytes */
        uint8_t *exact = malloc(n ? n : 1);
        for (size_t k = 0; k < n; k++)
            exact[k] = buf[k];
        free(buf);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
        printf("ok %s (%zu bytes)\n", argv[i], n);
    }
    return bad;
}
