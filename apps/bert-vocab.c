/*
 * bert-vocab - learn a WordPiece vocabulary from text files: a shell over
 * the library's vocabulary trainer (bert_vocab_trainer in
 * <libbert/bert_tokenizer.h>, which documents the semantics: Hugging Face
 * tokenizers' WordPieceTrainer as BertWordPieceTokenizer.train uses it).
 * Writes OUT/vocab.txt (one token per line, id order) and
 * OUT/tokenizer_config.json.
 *
 * Input: lines end at '\n' only and may be of any length.  NUL bytes and
 * other control characters are dropped (BERT's clean text); a line that is
 * not valid UTF-8 is skipped with a message naming it, the vocabulary is
 * still learned from the rest, and the exit status is then 2.  Empty files
 * add nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "apps/common.h"
#include "libbert/bert_tokenizer.h"
#include "libbert/bert_train.h"

#define PROG "bert-vocab"
#define DEFAULT_SPECIAL "[PAD],[UNK],[CLS],[SEP],[MASK]"
/* Room for DIR + "/tokenizer_config.json" in the output paths. */
#define PATH_MAX_LEN 4096
/* Lines of a file reported one by one as invalid UTF-8; the rest are only
 * counted, so that a binary file does not flood the terminal. */
#define MAX_LINE_WARNINGS 5

/* ---- options ------------------------------------------------------------ */

typedef struct {
    const char *out, *special;
    long vocab_size, min_frequency, limit_alphabet, max_len, max_lines;
    int lowercase, quiet;
    char **files;
    int nfiles;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: bert-vocab [options] --out DIR FILE...\n"
            "Learns a WordPiece vocabulary (Hugging Face WordPieceTrainer "
            "semantics) from text files\n(one text per line) and writes "
            "DIR/vocab.txt and DIR/tokenizer_config.json.\n\n"
            "  --out DIR             output directory (created)\n"
            "  --vocab-size N        target vocabulary size (default 30000)\n"
            "  --min-frequency N     least count of a merged pair (default 2)\n"
            "  --limit-alphabet N    keep the N most frequent characters "
            "(default 1000; 0 = all)\n"
            "  --lowercase           lower-case and strip accents (uncased "
            "model)\n"
            "  --special TOKENS      comma-separated special tokens, first ids\n"
            "                        (default [PAD],[UNK],[CLS],[SEP],[MASK])\n"
            "  --model-max-length N  for tokenizer_config.json (default 512)\n"
            "  --max-lines N         read at most N lines per file (0 = all)\n"
            "  -q, --quiet           no progress on stderr\n"
            "  --help, --version\n\n"
            "Input: UTF-8 text; only '\\n' ends a line, lines may be of any "
            "length.  NUL bytes\nand other control characters are dropped.  "
            "A line that is not valid UTF-8 is\nskipped with a message "
            "(FILE:LINE); the vocabulary is still written, and the exit\n"
            "status is 2.  The vocabulary never has fewer tokens than the "
            "special tokens, the\nalphabet and its ##-forms together.\n\n"
            "Exit status: 0 success, 1 usage error, 2 bad input (unreadable "
            "file, invalid UTF-8,\nunwritable DIR, out of memory).\n"
            "\nExamples:\n"
            "  bert-vocab --out my-vocab --vocab-size 30522 corpus.txt\n"
            "  bert-vocab --out my-vocab --vocab-size 8000 --lowercase "
            "part1.txt part2.txt\n"
            "  bert-vocab --out my-vocab --min-frequency 5 --special "
            "'[PAD],[UNK],[CLS],[SEP],[MASK]' corpus.txt\n");
}

/* Parses the value of --`name` as a decimal integer >= min into *v. */
static int parse_count(const char *name, const char *s, long min, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE || x < min) {
        fprintf(stderr, PROG ": --%s: bad number '%s' (want an integer >= %ld)\n",
                name, s, min);
        return -1;
    }
    *v = x;
    return 0;
}

/* Special tokens become lines of vocab.txt, so they must be UTF-8 without
 * line breaks. */
static int check_special(const char *list)
{
    size_t n = strlen(list);
    if (bert_utf8_valid(list, n) != n || strpbrk(list, "\n\r")) {
        fprintf(stderr, PROG ": --special: tokens must be UTF-8 without line breaks\n");
        return -1;
    }
    return 0;
}

/* Fills *o from the command line.  Returns -1 to go on, else the exit
 * status (after --help, --version or a usage error). */
static int parse_args(int argc, char **argv, options *o)
{
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'},
        {"vocab-size", required_argument, 0, 'v'},
        {"min-frequency", required_argument, 0, 'm'},
        {"limit-alphabet", required_argument, 0, 'a'},
        {"lowercase", no_argument, 0, 'l'},
        {"special", required_argument, 0, 's'},
        {"model-max-length", required_argument, 0, 'M'},
        {"max-lines", required_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    *o = (options){.special = DEFAULT_SPECIAL, .vocab_size = 30000,
                   .min_frequency = 2, .limit_alphabet = 1000, .max_len = 512};
    opterr = 0; /* our own messages, prefixed "bert-vocab:" */
    int c, bad = 0;
    while (!bad && (c = getopt_long(argc, argv, ":qhV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'v': bad = parse_count("vocab-size", optarg, 1, &o->vocab_size); break;
        case 'm': bad = parse_count("min-frequency", optarg, 0, &o->min_frequency); break;
        case 'a': bad = parse_count("limit-alphabet", optarg, 0, &o->limit_alphabet); break;
        case 'M': bad = parse_count("model-max-length", optarg, 1, &o->max_len); break;
        case 'n': bad = parse_count("max-lines", optarg, 0, &o->max_lines); break;
        case 'l': o->lowercase = 1; break;
        case 's': o->special = optarg; bad = check_special(optarg); break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("bert-vocab (libbert) %s\n", BERT_VERSION_STRING); return EXIT_OK;
        case ':':
            fprintf(stderr, PROG ": %s: missing value\n", argv[optind - 1]);
            bad = 1;
            break;
        default: /* optopt names an unknown short option; 0 for a long one */
            if (optopt)
                fprintf(stderr, PROG ": -%c: unknown option\n", optopt);
            else
                fprintf(stderr, PROG ": %s: unknown option\n", argv[optind - 1]);
            bad = 1;
        }
    }
    if (!bad && (!o->out || !*o->out)) {
        fprintf(stderr, PROG ": --out DIR is required\n");
        bad = 1;
    } else if (!bad && optind >= argc) {
        fprintf(stderr, PROG ": no input FILE\n");
        bad = 1;
    } else if (!bad && strlen(o->out) + 32 > PATH_MAX_LEN) {
        fprintf(stderr, PROG ": %s: path too long\n", o->out);
        bad = 1;
    }
    if (bad) {
        fprintf(stderr, "Try 'bert-vocab --help'.\n");
        return EXIT_USAGE;
    }
    o->files = argv + optind;
    o->nfiles = argc - optind;
    return -1;
}

/* ---- reading the files -------------------------------------------------- */

/* Counts the words of the first max_lines lines (0: all) of path.  Returns
 * 0, 1 when lines were skipped as invalid UTF-8 (reported), or -1 after
 * printing why the file could not be read. */
static int count_file(bert_vocab_trainer *vt, const char *path, long max_lines)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long n, lineno = 0, skipped = 0;
    int rc = 0;
    bert_error err;
    while ((n = app_read_line(f, &line, &cap)) >= 0) {
        lineno++;
        int r = bert_vocab_trainer_add(vt, line, (size_t)n, &err);
        if (r == BERT_EUTF8) {
            if (++skipped <= MAX_LINE_WARNINGS)
                fprintf(stderr, PROG ": %s:%ld: not valid UTF-8, line skipped\n",
                        path, lineno);
        } else if (r == BERT_ETOOLONG) {
            fprintf(stderr, PROG ": %s:%ld: %s\n", path, lineno, err.text);
            rc = -1;
            break;
        } else if (r) {
            fprintf(stderr, PROG ": %s\n", err.text);
            rc = -1;
            break;
        }
        if (max_lines && lineno >= max_lines)
            break;
    }
    int e = errno; /* of the read that ended the loop, if it failed */
    if (!rc && n == -2) {
        fprintf(stderr, PROG ": out of memory\n");
        rc = -1;
    } else if (!rc && ferror(f)) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(e));
        rc = -1;
    }
    if (skipped > MAX_LINE_WARNINGS)
        fprintf(stderr, PROG ": %s: %ld lines not valid UTF-8 skipped in all\n",
                path, skipped);
    free(line);
    fclose(f);
    return rc ? rc : skipped > 0;
}

/* ---- the output --------------------------------------------------------- */

/* Writes DIR/vocab.txt (one token per line, in id order) and
 * DIR/tokenizer_config.json; DIR is created when missing. */
static int write_output(const options *o, const bert_vocab_trainer *vt)
{
    if (mkdir(o->out, 0755) && errno != EEXIST) {
        fprintf(stderr, PROG ": %s: %s\n", o->out, strerror(errno));
        return -1;
    }
    char path[PATH_MAX_LEN];
    snprintf(path, sizeof path, "%s/vocab.txt", o->out); /* fits: parse_args */
    char tmp[PATH_MAX_LEN + 64];
    FILE *f = app_create(path, tmp);
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t n = bert_vocab_trainer_size(vt);
    for (size_t i = 0; i < n; i++) {
        fputs(bert_vocab_trainer_token(vt, i), f);
        putc('\n', f);
    }
    if (app_commit(f, tmp, path)) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    bert_error err;
    if (bert_write_tokenizer_config(o->out, o->lowercase, (size_t)o->max_len,
                                    &err)) {
        fprintf(stderr, PROG ": %s\n", err.text);
        return -1;
    }
    return 0;
}

/* The running count, on a terminal only: in a log, "\r" lines are noise. */
static void progress(size_t n_tokens, void *user)
{
    (void)user;
    fprintf(stderr, "\r" PROG ": %zu tokens", n_tokens);
}

int main(int argc, char **argv)
{
    options o;
    int st = parse_args(argc, argv, &o);
    if (st >= 0)
        return st;
    int tty = isatty(STDERR_FILENO);
    bert_vocab_trainer_params p = bert_vocab_trainer_default_params();
    p.vocab_size = (size_t)o.vocab_size;
    p.min_frequency = (size_t)o.min_frequency;
    p.limit_alphabet = (size_t)o.limit_alphabet;
    p.lowercase = o.lowercase;
    p.special_tokens = o.special;
    if (!o.quiet && tty)
        p.progress = progress;
    bert_vocab_trainer *vt;
    bert_error err;
    if (bert_vocab_trainer_create(&p, &vt, &err)) {
        fprintf(stderr, PROG ": %s\n", err.text);
        return EXIT_BADINPUT;
    }
    int skipped = 0;
    st = EXIT_BADINPUT;
    for (int i = 0; i < o.nfiles && skipped >= 0; i++) {
        int r = count_file(vt, o.files[i], o.max_lines);
        skipped = r < 0 ? -1 : skipped | r;
    }
    if (skipped >= 0 && !o.quiet)
        fprintf(stderr, PROG ": %zu distinct words\n",
                bert_vocab_trainer_n_words(vt));
    if (skipped >= 0) {
        if (bert_vocab_trainer_learn(vt, &err)) {
            fprintf(stderr, PROG ": %s\n", err.text);
        } else {
            if (!o.quiet)
                fprintf(stderr, "%s" PROG ": %zu tokens\n", tty ? "\r" : "",
                        bert_vocab_trainer_size(vt));
            if (!write_output(&o, vt))
                st = skipped ? EXIT_BADINPUT : EXIT_OK;
        }
    }
    bert_vocab_trainer_free(vt);
    return st;
}
