/*
 * fuzz/fuzz_tokenizer.c - libFuzzer target for the tokenizer.
 *
 * Input: the bytes before the first 0x00 are the text, the rest the pair;
 * the first byte also picks the truncation settings.  Encodes with and
 * without truncation and checks the encoding's invariants.  The tokenizer is
 * built once from a small vocabulary written to a temporary file (the
 * fuzzer must not depend on ../shared).
 */
#include <libbert/bert_tokenizer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bert_tokenizer *tok[2];
static bert_encoding *enc;

static const char *const vocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", "b", "##b", "ab", "##ab", "c",
    "##c", ".", ",", "\xc3\xa9", "##\xc3\xa9", "e", "##e", "\xe4\xb8\xad", "\xe2\x80\xa8",
    "##\xcc\x81", "\xce\xbf", "##\xcf\x83", "i", "##i", "[", "]", "!", "\xe1\x84\x92",
    "##\xe1\x85\xa1", "x", "##x", "\xd1\x8f", "##\xd1\x8f",
};

static void init(void)
{
    char path[] = "/tmp/fuzz_tokenizer_vocab.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    FILE *f = fdopen(fd, "w");
    for (size_t i = 0; i < sizeof vocab / sizeof vocab[0]; i++)
        fprintf(f, "%s\n", vocab[i]);
    fclose(f);
    bert_error err;
    if (bert_tokenizer_load_vocab(path, 1, -1, 1, &tok[0], &err) ||
        bert_tokenizer_load_vocab(path, 0, -1, 1, &tok[1], &err))
        abort();
    unlink(path);
    enc = bert_encoding_create();
    if (!enc)
        abort();
}

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__);   \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void check(const bert_tokenizer *t, const uint8_t *text, size_t len, const uint8_t *pair,
                  size_t plen, const bert_encode_params *p)
{
    bert_error err;
    int rc = bert_tokenizer_encode(t, (const char *)text, len, (const char *)pair, plen, p, enc,
                                   &err);
    if (rc) {
        CHECK(enc->n == 0);
        CHECK(rc == BERT_EUTF8 || rc == BERT_ETOOLONG || rc == BERT_EINVAL);
        if (rc == BERT_EUTF8)
            CHECK(err.byte_offset >= 0 &&
                  (size_t)err.byte_offset < (strstr(err.text, "pair") ? plen : len));
        return;
    }
    int has_pair = pair && plen;
    size_t n = enc->n, specials = p->add_special_tokens ? (has_pair ? 3 : 2) : 0;
    CHECK(n >= specials);
    if (p->max_length && p->max_length >= specials && !p->pad_to)
        CHECK(n <= p->max_length);
    size_t vs = bert_tokenizer_vocab_size(t);
    int32_t last_word[2] = {-1, -1};
    int64_t last_end[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        CHECK(enc->ids[i] >= 0 && (size_t)enc->ids[i] < vs);
        CHECK(bert_tokenizer_token(t, enc->ids[i]) != NULL);
        int32_t s = enc->seq_ids[i];
        CHECK(s >= -1 && s <= 1);
        if (s < 0) {
            CHECK(enc->word_ids[i] == -1 && enc->special_mask[i] == 1);
            CHECK(enc->offsets[2 * i] == 0 && enc->offsets[2 * i + 1] == 0);
            continue;
        }
        size_t L = s ? plen : len;
        CHECK(enc->type_ids[i] == s && enc->attention_mask[i] == 1);
        int64_t bs = enc->byte_offsets[2 * i], be = enc->byte_offsets[2 * i + 1];
        int64_t cs = enc->offsets[2 * i], ce = enc->offsets[2 * i + 1];
        CHECK(0 <= bs && bs < be && (size_t)be <= L);
        CHECK(0 <= cs && cs < ce && ce <= be);
        /* word ids never decrease, offsets never go back across words */
        CHECK(enc->word_ids[i] >= last_word[s]);
        if (enc->word_ids[i] > last_word[s])
            CHECK(bs >= last_end[s]);
        last_word[s] = enc->word_ids[i];
        if (be > last_end[s])
            last_end[s] = be;
        /* offsets are on character boundaries */
        const uint8_t *src = s ? pair : text;
        CHECK((src[bs] & 0xC0) != 0x80);
        CHECK((size_t)be == L || (src[be] & 0xC0) != 0x80);
    }
    for (size_t i = 0; i + 1 < n && p->pad_to; i++)
        CHECK(!(enc->attention_mask[i] == 0 && enc->attention_mask[i + 1] == 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!enc)
        init();
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    const uint8_t *sep = memchr(data, 0, size);
    size_t len = sep ? (size_t)(sep - data) : size;
    /* exact-size copies so ASan sees any over-read */
    uint8_t *text = malloc(len ? len : 1);
    memcpy(text, data, len);
    uint8_t *pair = NULL;
    size_t plen = 0;
    if (sep) {
        plen = size - len - 1;
        pair = malloc(plen ? plen : 1);
        memcpy(pair, sep + 1, plen);
    }
    const bert_tokenizer *t = tok[mode & 1];
    bert_encode_params p = bert_encode_default_params();
    check(t, text, len, pair, plen, &p);
    p.max_length = (mode >> 1) & 15;
    p.truncation = (bert_truncation)((mode >> 5) % 3);
    check(t, text, len, pair, plen, &p);
    p.pad_to = mode & 0x80 ? 24 : 0;
    p.add_special_tokens = !(mode & 0x40);
    check(t, text, len, pair, plen, &p);
    free(text);
    free(pair);
    return 0;
}
