/* common.c - helpers shared by the command-line tools. */
#include "apps/common.h"
#include <stdlib.h>

long app_read_line(FILE *f, char **buf, size_t *cap)
{
    size_t n = 0;
    int c;
    while ((c = getc(f)) != EOF) {
        if (n + 1 >= *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            char *nb = realloc(*buf, nc);
            if (!nb)
                return -2;
            *buf = nb;
            *cap = nc;
        }
        if (c == '\n')
            break;
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return -1;
    (*buf)[n] = '\0';
    return (long)n;
}
