/* modeldir.c - Hugging Face model directories around a trainer (bert_train.h):
 * the tokenizer it trains with, read from one, and the trainer saved as a
 * complete one, the weights and config of bert_trainer_save plus the
 * tokenizer files that from_pretrained and libbert's own loaders need
 * beside them.  Every file is written whole or not at all
 * (libbert/atomicfile.h), so that a kill or a full disk during a save
 * leaves the previous model usable. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/atomicfile.h"
#include "libbert/internal.h"
#include "libbert/readall.h"
#include "libbert/bert_train.h"

/* Copies from to to (to written whole or not at all); -1 with errno. */
static int copy_file(const char *from, const char *to)
{
    char *buf, tmp[4096];
    size_t len;
    FILE *in = fopen(from, "rb");
    if (!in)
        return -1;
    int rc = bert__read_all(in, 0, &buf, &len);
    fclose(in);
    if (rc != BERT_OK) {
        errno = rc == BERT_ENOMEM ? ENOMEM : EIO;
        return -1;
    }
    FILE *f = bert__file_create(to, tmp);
    if (!f) {
        free(buf);
        return -1;
    }
    int ok = fwrite(buf, 1, len, f) == len;
    free(buf);
    if (!ok) {
        bert__file_discard(f, tmp);
        return -1;
    }
    return bert__file_commit(f, tmp, to);
}

/* dir/tokenizer_config.json as transformers' `cls` saves it; -1 with
 * errno. */
static int write_tokenizer_config(const char *dir, const char *cls,
                                  int lowercase, size_t max_len)
{
    char path[4096], tmp[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = bert__file_create(path, tmp);
    if (!f)
        return -1;
    fprintf(f,
            "{\n  \"clean_up_tokenization_spaces\": true,\n"
            "  \"cls_token\": \"[CLS]\",\n  \"do_basic_tokenize\": true,\n"
            "  \"do_lower_case\": %s,\n  \"mask_token\": \"[MASK]\",\n"
            "  \"model_max_length\": %zu,\n  \"never_split\": null,\n"
            "  \"pad_token\": \"[PAD]\",\n  \"sep_token\": \"[SEP]\",\n"
            "  \"strip_accents\": null,\n  \"tokenize_chinese_chars\": true,\n"
            "  \"tokenizer_class\": \"%s\",\n"
            "  \"unk_token\": \"[UNK]\"\n}\n",
            lowercase ? "true" : "false", max_len, cls);
    return bert__file_commit(f, tmp, path);
}

int bert_write_tokenizer_config(const char *dir, int lowercase,
                                size_t model_max_length, bert_error *err)
{
    if (!dir)
        return bert__err(err, BERT_EINVAL,
                         "bert_write_tokenizer_config: NULL argument");
    if (write_tokenizer_config(dir, "BertTokenizer", lowercase,
                               model_max_length))
        return bert__err(err, BERT_EIO, "%s/tokenizer_config.json: %s", dir,
                         strerror(errno));
    return BERT_OK;
}

/* The tokenizer files of tok (loaded from `from`) into dir; -1 with errno. */
static int write_tokenizer_files(const bert_tokenizer *tok, const char *from,
                                 const char *dir, const bert_config *cfg)
{
    char a[4096], b[4096], tmp[4096];
    struct stat st;
    if (bert_tokenizer_get_kind(tok) == BERT_TOKENIZER_BPE) {
        /* byte-level BPE: the files as they are (they are the tokenizer) */
        static const char *const files[] = {
            "vocab.json", "merges.txt", "tokenizer.json",
            "tokenizer_config.json", "special_tokens_map.json"};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            snprintf(a, sizeof a, "%s/%s", from, files[i]);
            snprintf(b, sizeof b, "%s/%s", dir, files[i]);
            if (stat(a, &st) == 0 && strcmp(a, b) != 0 && copy_file(a, b))
                return -1;
        }
        return 0;
    }
    snprintf(a, sizeof a, "%s/vocab.txt", from);
    snprintf(b, sizeof b, "%s/vocab.txt", dir);
    if (strcmp(a, b) != 0 && copy_file(a, b))
        return -1;
    /* transformers' DistilBERT directories name DistilBertTokenizer: the
     * same WordPiece tokenizer without token_type_ids among its outputs
     * (DistilBERT's forward does not take them, so a pipeline fed by
     * BertTokenizer fails) */
    if (write_tokenizer_config(dir,
                               cfg->is_distilbert ? "DistilBertTokenizer"
                                                  : "BertTokenizer",
                               bert_tokenizer_lowercase(tok),
                               cfg->max_position))
        return -1;
    snprintf(b, sizeof b, "%s/special_tokens_map.json", dir);
    FILE *f = bert__file_create(b, tmp);
    if (!f)
        return -1;
    fprintf(f, "{\n  \"cls_token\": \"[CLS]\",\n  \"mask_token\": \"[MASK]\",\n"
               "  \"pad_token\": \"[PAD]\",\n  \"sep_token\": \"[SEP]\",\n"
               "  \"unk_token\": \"[UNK]\"\n}\n");
    return bert__file_commit(f, tmp, b);
}

/* bert_trainer_save writes into a fresh staging directory inside dir, then
 * each file is fsynced and renamed over its final name. */
static int save_weights(const bert_trainer *t, const char *dir,
                        bert_error *err)
{
    static const char *const files[] = {"config.json", "model.safetensors"};
    char stage[4096], a[4200], b[4096];
    snprintf(stage, sizeof stage, "%s/.bert-save.%ld", dir, (long)getpid());
    if (mkdir(stage, 0755) && errno != EEXIST)
        return bert__err(err, BERT_EIO, "cannot create %s: %s", stage,
                         strerror(errno));
    int rc = bert_trainer_save(t, stage, err);
    for (size_t i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", stage, files[i]);
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        if (!rc && bert__file_commit(NULL, a, b))
            rc = bert__err(err, BERT_EIO, "cannot write %s: %s", b,
                           strerror(errno));
        unlink(a);
    }
    rmdir(stage);
    return rc;
}

int bert_trainer_save_model_dir(const bert_trainer *t,
                                const bert_tokenizer *tok,
                                const char *tokenizer_dir, const char *dir,
                                bert_error *err)
{
    if (!t || !tok || !tokenizer_dir || !dir)
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_save_model_dir: NULL argument");
    if (mkdir(dir, 0755) && errno != EEXIST)
        return bert__err(err, BERT_EIO, "cannot create %s: %s", dir,
                         strerror(errno));
    int rc = save_weights(t, dir, err);
    if (rc)
        return rc;
    if (write_tokenizer_files(tok, tokenizer_dir, dir, bert_trainer_config(t)))
        return bert__err(err, BERT_EIO,
                         "cannot write the tokenizer files into %s: %s", dir,
                         strerror(errno));
    return BERT_OK;
}

int bert_tokenizer_load_for_training(const char *dir, int lowercase,
                                     bert_tokenizer **out, bert_error *err)
{
    if (out)
        *out = NULL;
    if (!dir || !out)
        return bert__err(err, BERT_EINVAL,
                         "bert_tokenizer_load_for_training: NULL argument");
    bert_tokenizer *t;
    int rc = bert_tokenizer_load(dir, &t, err);
    if (rc != BERT_OK || bert_tokenizer_get_kind(t) == BERT_TOKENIZER_BPE) {
        *out = t; /* byte-level BPE: as it is (NULL on error) */
        return rc;
    }
    /* WordPiece: only do_lower_case goes into the tokenizer_config.json
     * written with the model, so the rest is BertTokenizer's defaults */
    if (lowercase < 0)
        lowercase = bert_tokenizer_lowercase(t);
    bert_tokenizer_free(t);
    char vp[4096];
    snprintf(vp, sizeof vp, "%s/vocab.txt", dir);
    return bert_tokenizer_load_vocab(vp, lowercase, -1, 1, out, err);
}
