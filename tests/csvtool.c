/*
 * csvtool - a helper for the bert-classify tests (never installed).
 *
 *   csvtool tsv < in.csv        one line per CSV record, fields separated by
 *                               TAB, with \t \n \r \\ escaped (so shell
 *                               tools can count and cut records); exit 2 on
 *                               a malformed CSV
 *   csvtool fromlines < texts   lines (split on '\n' only) to a CSV with the
 *                               header text,pair (the pair is what follows
 *                               the first TAB, as bert-infer reads it)
 */
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nfield;

static void put_escaped(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\t': fputs("\\t", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        default: putchar(s[i]);
        }
    }
}

static void on_field(void *s, size_t n, void *data)
{
    (void)data;
    if (nfield++)
        putchar('\t');
    put_escaped(s, n);
}

static void on_record(int c, void *data)
{
    (void)c;
    (void)data;
    putchar('\n');
    nfield = 0;
}

static int no_space(unsigned char c)
{
    (void)c;
    return 0;
}

static int tsv(void)
{
    struct csv_parser p;
    char buf[4096];
    size_t n;
    csv_init(&p, CSV_STRICT | CSV_STRICT_FINI);
    csv_set_space_func(&p, no_space);
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        if (csv_parse(&p, buf, n, on_field, on_record, NULL) != n) {
            fprintf(stderr, "csvtool: %s\n", csv_strerror(csv_error(&p)));
            return 2;
        }
    if (csv_fini(&p, on_field, on_record, NULL)) {
        fprintf(stderr, "csvtool: %s\n", csv_strerror(csv_error(&p)));
        return 2;
    }
    csv_free(&p);
    return 0;
}

static int fromlines(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    puts("text,pair");
    while ((n = getdelim(&line, &cap, '\n', stdin)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            n--;
        char *tab = memchr(line, '\t', (size_t)n);
        size_t tl = tab ? (size_t)(tab - line) : (size_t)n;
        csv_fwrite(stdout, line, tl);
        putchar(',');
        if (tab)
            csv_fwrite(stdout, tab + 1, (size_t)n - tl - 1);
        putchar('\n');
    }
    free(line);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "tsv") == 0)
        return tsv();
    if (argc == 2 && strcmp(argv[1], "fromlines") == 0)
        return fromlines();
    fprintf(stderr, "usage: csvtool tsv|fromlines < input\n");
    return 1;
}
