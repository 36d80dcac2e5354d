/* common.h - helpers shared by the command-line tools (not part of libbert). */
#ifndef APPS_COMMON_H
#define APPS_COMMON_H
#include <stdio.h>
#include <stddef.h>

/* Exit codes shared by every tool. */
enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_BADINPUT = 2 };

/* Reads one line ending in '\n' (only) from f into *buf (grown as needed);
 * returns its length without the '\n', or -1 at end of file. */
long app_read_line(FILE *f, char **buf, size_t *cap);

#endif
