/* testutil.h - helpers shared by the test programs (not part of libbert). */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H
#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdio.h>

/* The rest of stream f, NUL-terminated (*len excludes the NUL); NULL on a
 * read error or when out of memory. */
char *tu_read_stream(FILE *f, size_t *len);

/* The whole file at path, as tu_read_stream; NULL when it cannot be read. */
char *tu_read_file(const char *path, size_t *len);

typedef struct tu_test {
    const char *name;
    CU_TestFunc fn;
} tu_test;

/* Runs tests[0..n) as one CUnit suite (verbose), only those named on the
 * command line when argv names any; returns the exit status: 0 when every
 * test passed and setup and teardown succeeded, else 1. */
int tu_run_suite(const char *suite, CU_InitializeFunc setup,
                 CU_CleanupFunc teardown, const tu_test *tests, size_t n,
                 int argc, char **argv);

#endif
