/* kernels.c - LayerNorm, activations, softmax and bias rows (see kernels.h). */
#include "libbert/kernels.h"

#include <math.h>
#include <string.h>

/* ---- LayerNorm ------------------------------------------------------------ */

static void ln_row(float *out, const float *x, const float *weight,
                   const float *bias, size_t C, float eps)
{
    double mean = 0, var = 0;
    for (size_t i = 0; i < C; i++)
        mean += x[i];
    mean /= (double)C;
    for (size_t i = 0; i < C; i++) {
        double d = x[i] - mean;
        var += d * d;
    }
    var /= (double)C;
    double rstd = 1.0 / sqrt(var + (double)eps);
    for (size_t i = 0; i < C; i++)
        out[i] = (float)((x[i] - mean) * rstd) * weight[i] + bias[i];
}

void bert__layernorm_forward(float *out, const float *inp, const float *weight,
                             const float *bias, size_t T, size_t C, float eps)
{
    for (size_t t = 0; t < T; t++)
        ln_row(out + t * C, inp + t * C, weight, bias, C, eps);
}

void bert__add_layernorm_forward(float *out, const float *a, const float *b,
                                 const float *weight, const float *bias,
                                 size_t T, size_t C, float eps)
{
    for (size_t t = 0; t < T; t++) {
        float *o = out + t * C;
        const float *x = a + t * C, *y = b + t * C;
        for (size_t i = 0; i < C; i++)
            o[i] = x[i] + y[i];
        ln_row(o, o, weight, bias, C, eps);
    }
}

/* ---- activations ---------------------------------------------------------- */

void bert__gelu_erf_forward(float *x, size_t n)
{
    const float r = 0.70710678118654752440f; /* 1/sqrt(2) */
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * r));
}

void bert__gelu_tanh_forward(float *x, size_t n)
{
    const float c = 0.79788456080286535588f; /* sqrt(2/pi) */
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

void bert__relu_forward(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void bert__tanh_forward(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tanhf(x[i]);
}

/* ---- softmax -------------------------------------------------------------- */

void bert__softmax_forward(float *x, size_t T, size_t n, size_t ld,
                           float scale, const float *mask)
{
    for (size_t t = 0; t < T; t++) {
        float *row = x + t * ld;
        float mx = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            float v = row[i] * scale + (mask ? mask[i] : 0.0f);
            row[i] = v;
            if (v > mx)
                mx = v;
        }
        if (mx == -INFINITY) {
            memset(row, 0, n * sizeof *row);
            continue;
        }
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            float e = expf(row[i] - mx);
            row[i] = e;
            sum += e;
        }
        float inv = (float)(1.0 / sum);
        for (size_t i = 0; i < n; i++)
            row[i] *= inv;
    }
}

/* ---- bias ----------------------------------------------------------------- */

void bert__bias_fill(float *out, const float *bias, size_t T, size_t OC)
{
    for (size_t t = 0; t < T; t++)
        memcpy(out + t * OC, bias, OC * sizeof *out);
}
