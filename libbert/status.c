/* status.c - status codes to text (the X-macro in bert_tokenizer.h). */
#include "libbert/bert_tokenizer.h"

const char *bert_strerror(int status)
{
    switch (status) {
#define BERT_STATUS_CASE_(name, val, msg)                                      \
    case val:                                                                  \
        return msg;
        BERT_STATUS_MAP(BERT_STATUS_CASE_)
#undef BERT_STATUS_CASE_
    }
    return "unknown status";
}
