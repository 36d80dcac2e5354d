/* common.h - helpers shared by the command-line tools (not part of libbert). */
#ifndef APPS_COMMON_H
#define APPS_COMMON_H
#include <libbert/bert.h>
#include <stdio.h>
#include <stddef.h>

/* Exit codes shared by every tool. */
enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_BADINPUT = 2 };

/* Reads one line ending in '\n' (only) from f into *buf (grown as needed);
 * returns its length without the '\n', or -1 at end of file. */
long app_read_line(FILE *f, char **buf, size_t *cap);

/* The directory of a bundled default model `name` ("sentiment", "ner"):
 * bert_default_model_dir's, except that a program of the build tree takes
 * $(abs_top_srcdir)/data/NAME when it holds a config.json and
 * $LIBBERT_MODELDIR is not set.  Writes the path to buf and returns buf,
 * or returns NULL with err naming the places tried. */
const char *app_default_model(const char *name, char *buf, size_t cap,
                              bert_error *err);

/* Writes s[0..n) to f as a JSON string (with the quotes).  Invalid UTF-8
 * bytes become U+FFFD, control characters are escaped. */
void app_json_string(FILE *f, const char *s, size_t n);

/* The value of --threads: a number from 1 to 1024 (else prints
 * "PROG: --threads needs a number from 1 to 1024, not 'S'" and returns -1:
 * a usage error).  A count above the CPUs this process may run on
 * (sched_getaffinity) is lowered to that count, with a note on stderr:
 * OpenMP and BLIS threads spin while they wait, and more of them than cores
 * turned 20 lines of 0.17 s into 41 s. */
int app_parse_threads(const char *prog, const char *s);

/* "PROG: WHERE:LINE: MSG" (line > 0) or "PROG: WHERE: MSG" on stderr: why
 * one input text got no result. */
void app_text_error(const char *prog, const char *where, long line,
                    const char *msg);

/* The exit status of a tool that wrote its results to stdout: flushes
 * stdout, then EXIT_BADINPUT when that fails (after "PROG: write error:
 * ...") or n_errors > 0, else EXIT_OK. */
int app_exit_status(const char *prog, long long n_errors);

/* 1 when a progress line may be drawn on stderr: stderr is a terminal and
 * stdout is not that same terminal (there the data would mix with it). */
int app_progress_ok(void);

/* ---- files written whole or not at all ---- */

/* Every file the tools write goes to a temporary file beside it, is
 * flushed to disk (fsync) and renamed over the final name, so that a kill,
 * a full disk or a crash during a write leaves the previous file intact
 * (libbert/atomicfile.h, which the library's model-directory writer uses
 * too).
 *
 * app_create(path, tmp): opens the temporary file for path (its name, at
 * most 4096 bytes, is written to tmp) for writing; NULL with errno set.
 * app_commit(f, tmp, path): flushes, fsyncs and closes f, renames tmp to
 * path and fsyncs the directory.  Returns 0, or -1 with errno set after
 * removing tmp (path untouched).  f NULL: only the rename part (for a file
 * written by someone else at tmp).
 * app_discard(f, tmp): closes f (when not NULL) and removes tmp. */
FILE *app_create(const char *path, char *tmp);
int app_commit(FILE *f, const char *tmp, const char *path);
void app_discard(FILE *f, const char *tmp);

/* Seconds on the monotonic clock, for the tools' timings. */
double app_now(void);

/* An output directory checked before long work: created when missing, a
 * directory, taking new files.  0, or -1 after "PROG: ..." on stderr
 * naming option opt ("--out"; "" for an operand) and dir. */
int app_out_dir(const char *prog, const char *opt, const char *dir);

/* Options from a table: each long option --NAME stores into the struct at
 * base + off as its kind says: a string (the argument), 1 or 0 into an int,
 * a number into a double, minutes as seconds into a double, a long, a
 * float, a size_t (<= 0: 0), a uint64_t, or a thread count (--threads
 * rules) into a long.  The table's first entry is also -q.  --help prints
 * usage(stdout), --version "PROG (libbert) VERSION".  Returns -1 to go on
 * (optind at the first operand), EXIT_OK after --help/--version, or
 * EXIT_USAGE after a message (an unknown option: usage(stderr)). */
enum { APP_STR, APP_SET, APP_CLR, APP_DBL, APP_MIN, APP_LNG, APP_FLT,
       APP_SZ, APP_U64, APP_THR };
typedef struct {
    const char *name;
    int kind;
    size_t off;
} app_optdef;
int app_options(const char *prog, int argc, char **argv,
                const app_optdef *defs, size_t n, void *base,
                void (*usage)(FILE *));

/* ---- in common_model.c, for the tools that link libbert ---- */

/* One JSON Lines input record: {"text": STRING, "text_pair": STRING or
 * null} (other keys ignored; strings may hold TABs, newlines, NULs).  On
 * success *text, *tlen and *pair, *plen (NULL and 0 when absent, null or "")
 * point into *owner, to be released with app_jsonl_free; returns 0.  Else
 * writes the reason to msg and returns -1. */
int app_jsonl_parse(const char *line, size_t len, void **owner,
                    const char **text, size_t *tlen, const char **pair,
                    size_t *plen, char *msg, size_t msgcap);
void app_jsonl_free(void *owner);

/* Calls fn(ctx, text, len, pair, pair_len, where, line) on each of
 * argv[first..argc) (where "argument N", line 0, no pair) or, when there
 * are none, on each line of standard input (where "<stdin>", line from 1):
 * the line is the text, or with jsonl a JSON Lines record (app_jsonl_parse;
 * a bad record calls fn with text NULL and the reason in pair).  Returns 0,
 * or -1 after printing "PROG: out of memory" when a line could not be
 * read. */
typedef int (*app_text_fn)(void *ctx, const char *text, size_t len,
                           const char *pair, size_t pair_len,
                           const char *where, long line);
int app_each_text(const char *prog, int argc, char **argv, int first,
                  int jsonl, app_text_fn fn, void *ctx);

/* Loads the model of a tool: *dir, or when *dir is NULL the bundled default
 * model `name` (then *dir is set to its directory; `what` names it in the
 * message when it is missing, as in "the default NER model").  The model
 * must be a `task` model (BERT_TASK_SEQUENCE: with at least one label).
 * Returns the model, or prints "PROG: ..." to stderr and returns NULL. */
bert_model *app_load_model(const char *prog, const char **dir,
                           const char *name, const char *what,
                           bert_task task);

/* The kernels the environment variable BERT_KERNELS asks for ("auto",
 * "avx512", "avx2", "blis"; unset or empty: auto) in *out; -1 after
 * printing "PROG: ..." when it names none of them.  app_load_model and
 * app_session apply it. */
int app_kernels(const char *prog, bert_kernels *out);

/* --precision NAME ("fp32", "bf16", "int8"): the precision app_load_model
 * loads the tool's model in.  Without the option, the environment
 * variable BERT_PRECISION, else fp32.  Returns 0, or -1 after printing
 * "PROG: ..." for an unknown name. */
int app_set_precision(const char *prog, const char *name);
/* The precision asked for (option, else environment) in *out; -1 after
 * printing "PROG: ..." when BERT_PRECISION names none. */
int app_precision(const char *prog, bert_precision *out);

/* The options every model tool takes, for the default branch of its
 * getopt_long loop: -t/--threads N (into *threads, app_parse_threads),
 * --precision P (app_set_precision), -h/--help (usage(stdout)),
 * -V/--version, and any other option (a usage error after "Try 'PROG
 * --help'.").  Returns -1 when parsing goes on, else the status the tool
 * exits with now: EXIT_OK after --help or --version, else EXIT_USAGE. */
int app_option(const char *prog, int opt, const char *arg, int *threads,
               void (*usage)(FILE *));

/* Long texts in the classifying tools: windows of the model's maximum
 * length overlapping by `stride` tokens (NULL: a quarter of a window) by
 * default, or with truncate only the first max-length tokens.  Fills *w;
 * returns 0, or -1 after printing why --stride is bad. */
int app_long_params(const char *prog, const bert_model *m, int truncate,
                    const char *stride, bert_window_params *w);
/* The summary lines of a run on stderr: how many texts (`noun`: "text",
 * "row") went over windows and how many were truncated (with what to do
 * about it); nothing when both are 0.  where: "FILE: " or "". */
void app_long_summary(const char *prog, const char *where, const char *noun,
                      long long n_windowed, long long n_truncated,
                      const bert_window_params *w);

/* A session on m with `threads` threads, or NULL after printing
 * "PROG: DIR: reason" to stderr. */
bert_session *app_session(const char *prog, const bert_model *m,
                          const char *dir, int threads);

#endif
