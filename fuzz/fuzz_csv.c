/* fuzz_csv.c - libFuzzer target for bert-classify's CSV reader and its
 * window hand-off between the reader thread and the main thread: the
 * input is the CSV file, classified with --window 2 --batch 1 (a hand-off
 * every two rows) and, by the first byte, --no-header, --format jsonl,
 * --pair-column and --top-k.  The whole tool runs (its main is compiled in
 * as classify_main); the model is $FUZZ_MODEL (default data/sentiment).
 * Every input must end with exit status 0 or 2 and no sanitizer report. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define main classify_main
#include "apps/bert-classify.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char in[64], out[64];
    if (!in[0]) {
        snprintf(in, sizeof in, "/tmp/fuzz_csv.%ld.csv", (long)getpid());
        snprintf(out, sizeof out, "/tmp/fuzz_csv.%ld.out", (long)getpid());
    }
    if (size < 1)
        return 0;
    FILE *f = fopen(in, "wb");
    if (!f)
        abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    const char *model = getenv("FUZZ_MODEL");
    char *argv[24];
    int argc = 0;
    argv[argc++] = "bert-classify";
    argv[argc++] = "--model";
    argv[argc++] = (char *)(model && *model ? model : "data/sentiment");
    argv[argc++] = "--window";
    argv[argc++] = "2";
    argv[argc++] = "--batch";
    argv[argc++] = "1";
    argv[argc++] = "-o";
    argv[argc++] = out;
    argv[argc++] = "--column";
    argv[argc++] = data[0] & 1 ? "1" : "text";
    if (data[0] & 1)
        argv[argc++] = "--no-header";
    if (data[0] & 2) {
        argv[argc++] = "--format";
        argv[argc++] = "jsonl";
    }
    if (data[0] & 4) {
        argv[argc++] = "--pair-column";
        argv[argc++] = "2";
    }
    if (data[0] & 8) {
        argv[argc++] = "--top-k";
        argv[argc++] = "2";
    }
    argv[argc++] = in;
    argv[argc] = NULL;
    optind = 1; /* getopt_long starts over on every call */
    int st = classify_main(argc, argv);
    if (st != 0 && st != 2)
        abort();
    unlink(out);
    return 0;
}
