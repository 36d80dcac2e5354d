/*
 * fuzz/fuzz_tokenizer.c - libFuzzer target for the tokenizer.
 *
 * Input: the bytes before the first 0x00 are the text, the rest the pair;
 * the first byte also picks the truncation settings.  Encodes with and
 * without truncation and checks the encoding's invariants, with a WordPiece
 * tokenizer (uncased or cased, picked by the first byte) and with a
 * byte-level BPE one.  The tokenizers are built once from small vocabularies
 * written to temporary files (the fuzzer must not depend on ../shared).
 */
#include <libbert/bert_tokenizer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bert_tokenizer *tok[3]; /* uncased, cased WordPiece; BPE */
static bert_encoding *enc;

static const char *const vocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", "b", "##b", "ab", "##ab", "c",
    "##c", ".", ",", "\xc3\xa9", "##\xc3\xa9", "e", "##e", "\xe4\xb8\xad", "\xe2\x80\xa8",
    "##\xcc\x81", "\xce\xbf", "##\xcf\x83", "i", "##i", "[", "]", "!", "\xe1\x84\x92",
    "##\xe1\x85\xa1", "x", "##x", "\xd1\x8f", "##\xd1\x8f",
};

/* GPT-2's bytes_to_unicode(b) in UTF-8 (at most 2 bytes). */
static size_t byte_char(unsigned b, char *o)
{
    unsigned n = 0, c = b;
    int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (!printable) {
        for (unsigned k = 0; k < b; k++)
            n += !((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE);
        c = 256 + n;
    }
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    o[0] = (char)(0xC0 | (c >> 6));
    o[1] = (char)(0x80 | (c & 0x3F));
    return 2;
}

/* A RoBERTa-style tokenizer: the 256 byte tokens, a few merges (space + a,
 * a b, the two bytes of e-acute), <mask> with lstrip. */
static void init_bpe(void)
{
    char dir[] = "/tmp/fuzz_tokenizer_bpe.XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char path[64];
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fprintf(f, "{\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2, \"<unk>\": 3, \"<mask>\": 4");
    for (unsigned b = 0; b < 256; b++) {
        char c[2];
        size_t n = byte_char(b, c);
        fprintf(f, ", \"%s%.*s\": %u", (b == '"' || b == '\\') ? "\\" : "", (int)n, c, 5 + b);
    }
    fprintf(f, ", \"\xc4\xa0" "a\": 261, \"ab\": 262, \"\xc4\xa0" "ab\": 263,"
               " \"\xc3\x83\xc2\xa9\": 264}");
    fclose(f);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    f = fopen(path, "w");
    if (!f)
        abort();
    fprintf(f, "#version: 0.2\n\xc4\xa0 a\na b\n\xc4\xa0" "a b\n\xc3\x83 \xc2\xa9\n");
    fclose(f);
    bert_error err;
    if (bert_tokenizer_load(dir, &tok[2], &err)) {
        fprintf(stderr, "%s\n", err.text);
        abort();
    }
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    unlink(path);
    rmdir(dir);
}

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
    init_bpe();
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
    int bpe = t == tok[2]; /* <s> A </s></s> B </s>, type ids 0 */
    size_t n = enc->n, specials = p->add_special_tokens ? (has_pair ? 3 + bpe : 2) : 0;
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
        CHECK(enc->type_ids[i] == (bpe ? 0 : s) && enc->attention_mask[i] == 1);
        int64_t bs = enc->byte_offsets[2 * i], be = enc->byte_offsets[2 * i + 1];
        int64_t cs = enc->offsets[2 * i], ce = enc->offsets[2 * i + 1];
        /* BPE: trim_offsets leaves a token of spaces an empty span */
        CHECK(0 <= bs && (bpe ? bs <= be : bs < be) && (size_t)be <= L);
        CHECK(0 <= cs && (bpe ? cs <= ce : cs < ce) && ce <= be);
        /* word ids never decrease, offsets never go back across words */
        CHECK(enc->word_ids[i] >= last_word[s]);
        if (enc->word_ids[i] > last_word[s])
            CHECK(bs >= last_end[s]);
        last_word[s] = enc->word_ids[i];
        if (be > last_end[s])
            last_end[s] = be;
        /* offsets are on character boundaries */
        const uint8_t *src = s ? pair : text;
        CHECK((size_t)bs == L || (src[bs] & 0xC0) != 0x80);
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
    for (int k = 0; k < 2; k++) {
        const bert_tokenizer *t = tok[k ? 2 : mode & 1];
        bert_encode_params p = bert_encode_default_params();
        check(t, text, len, pair, plen, &p);
        p.max_length = (mode >> 1) & 15;
        p.truncation = (bert_truncation)((mode >> 5) % 3);
        check(t, text, len, pair, plen, &p);
        p.pad_to = mode & 0x80 ? 24 : 0;
        p.add_special_tokens = !(mode & 0x40);
        check(t, text, len, pair, plen, &p);
    }
    free(text);
    free(pair);
    return 0;
}
