/*
 * libbert/kernels.h - element-wise and row-wise kernels of the encoder.
 *
 * Naming follows llm.c: <op>_forward(out..., in..., weights..., dims).
 * Dimension letters: T rows (tokens), C channels, OC output channels.
 * All pointers are row-major, contiguous rows unless a stride is given.
 * None allocates, none fails; in-place use is allowed where stated.
 */
#ifndef LIBBERT_KERNELS_H
#define LIBBERT_KERNELS_H

#include <stddef.h>

#include "libbert/bert.h"

/* out (T,C) = LayerNorm(inp (T,C)) * weight (C) + bias (C), biased variance,
 * as torch.nn.LayerNorm
 * (https://pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html).
 * Statistics are accumulated in double.  out may equal inp. */
void bert__layernorm_forward(float *out, const float *inp, const float *weight,
                             const float *bias, size_t T, size_t C, float eps);

/* out (T,C) = LayerNorm(a + b): the post-norm residual.  out may equal a or
 * b. */
void bert__add_layernorm_forward(float *out, const float *a, const float *b,
                                 const float *weight, const float *bias,
                                 size_t T, size_t C, float eps);

/* In place on n values: exact GELU x/2 (1 + erf(x/sqrt 2)) ("gelu"). */
void bert__gelu_erf_forward(float *x, size_t n);
/* Its derivative, for training: dinp (n) += dout * GELU'(inp), GELU'(x) =
 * (1 + erf(x/sqrt 2))/2 + x e^(-x^2/2)/sqrt(2 pi). */
void bert__gelu_erf_backward(float *dinp, const float *dout, const float *inp,
                             size_t n);
/* In place: tanh GELU x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 * ("gelu_new", "gelu_pytorch_tanh"). */
void bert__gelu_tanh_forward(float *x, size_t n);
/* In place: max(x, 0). */
void bert__relu_forward(float *x, size_t n);
/* In place: tanh. */
void bert__tanh_forward(float *x, size_t n);

/* Row softmax in place on x (T rows of n values, row stride ld >= n):
 * x = softmax(scale * x + mask) where mask (n) is an additive mask (NULL =
 * none; use -INFINITY or a large negative value for masked keys).  A row
 * whose every entry is -inf becomes all zeros (never NaN). */
void bert__softmax_forward(float *x, size_t T, size_t n, size_t ld,
                           float scale, const float *mask);

/* One row of softmax cross-entropy, for training: *loss = logsumexp(l) -
 * l[target] (summed in double) and, when d is non-NULL, d (C) = scale *
 * (softmax(l) - onehot(target)).  Returns 0, or -1 (nothing done) where the
 * CPU has no vector path: the caller's scalar code is the reference. */
int bert__xent_row(float *d, const float *l, size_t target, size_t C,
                   float scale, double *loss);

/* out (T,OC) rows all set to bias (OC) (so a following GEMM with beta = 1
 * adds X W^T). */
void bert__bias_fill(float *out, const float *bias, size_t T, size_t OC);

/* In place: x (T,C) = act(x + bias) with bias (C) (NULL = none); the
 * activation as config.json names it.  The feed-forward epilogue. */
void bert__bias_act_forward(float *x, const float *bias, size_t T, size_t C,
                            bert_activation act);

/* In place: x (T,C) = LayerNorm(x + (y + bias)): the post-norm residual with
 * the projection's bias folded in (y = the bias-free product). */
void bert__bias_add_layernorm_forward(float *x, const float *y,
                                      const float *bias, const float *weight,
                                      const float *lnbias, size_t T, size_t C,
                                      float eps);

#endif
