/* fuzz_vocab.c - libFuzzer target for the vocabulary trainer (bert-vocab,
 * its main compiled in as vocab_main): the first byte picks --lowercase,
 * --min-frequency 1 or 2, --limit-alphabet 8 and a vocabulary size of
 * 10 + 2 * byte 2; the rest is the training text.  Every input: exit status
 * 0 or 2, a vocabulary written or refused, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define main vocab_main
#include "apps/bert-vocab.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char in[64], out[64];
    if (!in[0]) {
        snprintf(in, sizeof in, "/tmp/fuzz_vocab.%ld.txt", (long)getpid());
        snprintf(out, sizeof out, "/tmp/fuzz_vocab.%ld", (long)getpid());
    }
    if (size < 2)
        return 0;
    FILE *f = fopen(in, "wb");
    if (!f)
        abort();
    fwrite(data + 2, 1, size - 2, f);
    fclose(f);
    char vs[16];
    snprintf(vs, sizeof vs, "%d", 10 + 2 * data[1]);
    char *argv[16];
    int argc = 0;
    argv[argc++] = "bert-vocab";
    argv[argc++] = "-q";
    argv[argc++] = "--out";
    argv[argc++] = out;
    argv[argc++] = "--vocab-size";
    argv[argc++] = vs;
    argv[argc++] = "--min-frequency";
    argv[argc++] = data[0] & 1 ? "1" : "2";
    if (data[0] & 2)
        argv[argc++] = "--lowercase";
    if (data[0] & 4) {
        argv[argc++] = "--limit-alphabet";
        argv[argc++] = "8";
    }
    argv[argc++] = in;
    argv[argc] = NULL;
    optind = 1;
    int st = vocab_main(argc, argv);
    if (st != 0 && st != 2)
        abort();
    return 0;
}
