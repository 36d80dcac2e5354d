/*
 * tokenizer/utf8.c - strict UTF-8 validation (what Rust's str accepts: no
 * overlong forms, no surrogates, nothing above U+10FFFF).  The input is
 * validated once up front so the pipeline can decode without checks.
 */
#include "tokenizer/tokenizer_internal.h"

#include <string.h>

size_t bert__utf8_valid_prefix(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        /* skip ASCII eight bytes at a time */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        uint8_t b = s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (b >= 0xC2 && b <= 0xDF)
            need = 1;
        else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            if (b == 0xE0)
                lo = 0xA0; /* overlong */
            else if (b == 0xED)
                hi = 0x9F; /* surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            if (b == 0xF0)
                lo = 0x90; /* overlong */
            else if (b == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            return i; /* continuation byte, C0/C1 or F5..FF */
        }
        if (len - i <= need)
            return i; /* truncated sequence */
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += need + 1;
    }
    return len;
}

size_t bert_utf8_valid(const char *s, size_t len)
{
    return s ? bert__utf8_valid_prefix((const uint8_t *)s, len) : 0;
}
