/* bench/random_model.h - write a Hugging Face model directory (config.json +
 * model.safetensors) with random weights for a named BERT shape, so that
 * bert-bench can time the real loader and encoder without a checkpoint. */
#ifndef BENCH_RANDOM_MODEL_H
#define BENCH_RANDOM_MODEL_H

#include <stddef.h>

typedef struct bench_shape {
    const char *name;
    int distil;          /* DistilBertForSequenceClassification, else Bert */
    int layers, hidden, heads, inter;
    size_t vocab, max_pos, labels; /* 0: 30522, 512, 2 */
} bench_shape;

/* The shapes of ../shared/bench/ort (plus a real DistilBERT layout);
 * NULL for an unknown name.  Vocabulary 30522, 512 positions, 2 token
 * types, 2 labels, erf GELU, LayerNorm eps 1e-12. */
const bench_shape *bench_shape_find(const char *name);
/* "bert-base|distilbert-base|..." for usage messages. */
const char *bench_shape_names(void);

/* Writes dir/config.json and dir/model.safetensors (sequence
 * classification; every weight and bias uniform with std 0.02, LayerNorm
 * weights 1 + that, deterministic in seed), streamed tensor by tensor
 * through libbert's safetensors writer.  dir must exist.  Returns 0, or -1
 * with a message in err.  bert-bench's --shape and bert-mkmodel. */
int bench_write_random_model(const char *dir, const bench_shape *sh,
                             unsigned long long seed, char *err,
                             size_t errlen);

/* Floating-point operations of one forward pass over a sequence of n
 * tokens: the dense layers, QK^T and PV, pooler/pre-classifier and
 * classifier (element-wise work is not counted). */
double bench_flops(const bench_shape *sh, size_t n);
/* The operations libbert actually runs when only the [CLS] row is read
 * (sequence logits without hidden states): the last layer computes keys and
 * values for all n rows, the rest for one row. */
double bench_flops_cls(const bench_shape *sh, size_t n);

#endif
