/* testutil.c - helpers shared by the test programs. */
#include "tests/testutil.h"

#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

char *tu_read_stream(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n + 1 == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - 1 - n, f);
        if (r == 0)
            break;
        n += r;
    }
    if (!b || ferror(f)) {
        free(b);
        return NULL;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = tu_read_stream(f, len);
    fclose(f);
    return b;
}

int tu_run_suite(const char *suite, CU_InitializeFunc setup,
                 CU_CleanupFunc teardown, const tu_test *tests, size_t n,
                 int argc, char **argv)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite(suite, setup, teardown);
    for (size_t i = 0; i < n; i++) {
        int want = argc < 2;
        for (int a = 1; a < argc; a++)
            want |= strcmp(argv[a], tests[i].name) == 0;
        if (want)
            CU_add_test(s, tests[i].name, tests[i].fn);
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails =
        CU_get_number_of_failures() + CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
