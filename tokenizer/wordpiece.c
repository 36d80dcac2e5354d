/*
 * tokenizer/wordpiece.c - WordPiece: greedy longest-match-first with the
 * continuation prefix, as the reference's WordPiece model.
 *
 * The reference tries the whole rest of the word, then shortens it by one
 * character at a time until the vocabulary has it.  Walking the byte trie
 * from the current position and remembering the last node that ends a
 * token finds the same longest match in one pass over it.
 */
#include "tokenizer/tokenizer_internal.h"

size_t bert__wordpiece(const bert_tokenizer *t, const uint8_t *w, size_t len, bt_piece *out)
{
    const bt_trie *tr = &t->trie;
    size_t start = 0, n = 0;
    while (start < len) {
        int32_t node = start == 0 ? tr->root_next[w[start]] : tr->cont_next[w[start]];
        int32_t best_id = -1;
        size_t best_end = 0, p = start + 1;
        while (node >= 0) {
            int32_t id = tr->node_id[node];
            /* a match must end on a character boundary */
            if (id >= 0 && (p == len || (w[p] & 0xC0) != 0x80)) {
                best_id = id;
                best_end = p;
            }
            if (p == len)
                break;
            node = bt_trie_get(tr, node, w[p]);
            p++;
        }
        if (best_id < 0)
            return 0;
        out[n].start = (uint32_t)start;
        out[n].end = (uint32_t)best_end;
        out[n].id = best_id;
        n++;
        start = best_end;
    }
    return n;
}
