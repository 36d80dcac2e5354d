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

/* The directory of a bundled default model `name` ("sentiment", "ner"):
 * $(abs_top_srcdir)/data/NAME when it holds a config.json (running from the
 * build tree), else $(pkgdatadir)/models/NAME when that does.  Writes the
 * path to buf and returns buf, or returns NULL (buf then lists the places
 * tried, for the error message). */
const char *app_default_model(const char *name, char *buf, size_t cap);

/* Writes s[0..n) to f as a JSON string (with the quotes).  Invalid UTF-8
 * bytes become U+FFFD, control characters are escaped. */
void app_json_string(FILE *f, const char *s, size_t n);

/* Length of the valid UTF-8 prefix of s[0..n) (n when all valid). */
size_t app_utf8_valid(const char *s, size_t n);

#endif
