/* test_version.c - bert_version() and the configure-generated version
 * macros of <libbert/bert_version.h> agree with configure's AC_INIT. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "libbert/bert.h"
#include "tests/testutil.h"

static void test_version_string(void)
{
    /* the library, the headers and configure tell the same version */
    CU_ASSERT_PTR_NOT_NULL_FATAL(bert_version());
    CU_ASSERT_STRING_EQUAL(bert_version(), BERT_VERSION_STRING);
    CU_ASSERT_STRING_EQUAL(bert_version(), PACKAGE_VERSION);
}

static void test_version_numbers(void)
{
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", BERT_VERSION_MAJOR,
             BERT_VERSION_MINOR, BERT_VERSION_PATCH);
    /* the string starts with MAJOR.MINOR.PATCH (a suffix like "-rc1" may
     * follow) */
    CU_ASSERT_EQUAL(strncmp(BERT_VERSION_STRING, want, strlen(want)), 0);
    CU_ASSERT_EQUAL(BERT_VERSION_NUMBER, BERT_VERSION_MAJOR * 10000 +
                                             BERT_VERSION_MINOR * 100 +
                                             BERT_VERSION_PATCH);
#if BERT_VERSION_NUMBER < 100
    CU_FAIL("BERT_VERSION_NUMBER usable in #if, and >= 0.1.0");
#endif
}

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"version_string", test_version_string},
        {"version_numbers", test_version_numbers},
    };
    return tu_run_suite("version", NULL, NULL, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
