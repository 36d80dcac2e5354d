/* version.c - the version of the library at run time (the headers' version
 * is BERT_VERSION_STRING; both come from configure's AC_INIT). */
#include "libbert/bert_tokenizer.h"

const char *bert_version(void) { return BERT_VERSION_STRING; }
