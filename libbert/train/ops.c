/* libbert/train/ops.c - forward/backward kernels of the trainer.  See ops.h.
 * The kernels are the float instantiation of ops_impl.h; the counter-based
 * random numbers do not depend on the scalar type and live here once. */
#include "libbert/gemm.h"
#include "libbert/train/ops.h"

#include <math.h>

/* ---- counter-based random numbers -------------------------------------- */

static uint64_t hash3(uint64_t seed, uint64_t stream, uint64_t idx)
{
    return bert__t_mix64(bert__t_mask_key(seed, stream) ^ idx);
}

double bert__t_uniform(uint64_t seed, uint64_t stream, uint64_t idx)
{
    return (double)(hash3(seed, stream, idx) >> 11) * (1.0 / 9007199254740992.0);
}

double bert__t_normal(uint64_t seed, uint64_t stream, uint64_t idx)
{
    double u1 = bert__t_uniform(seed, stream, 2 * idx);
    double u2 = bert__t_uniform(seed, stream, 2 * idx + 1);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int bert__t_keep(uint64_t seed, uint64_t stream, uint64_t idx, float p)
{
    return bert__t_keep_at(bert__t_mask_key(seed, stream), idx, p);
}

/* ---- the float kernels ------------------------------------------------- */

/* Products go through libbert's product layer (gemm.h), with the kernels
 * inference uses; the trainer's weights change every step, so they are
 * packed per call like any B operand. */
static void sgemm_layer(void *ctx, int slot, size_t m, size_t n, size_t k,
                        float alpha, const float *a, size_t rsa, size_t csa,
                        const float *b, size_t rsb, size_t csb, float beta,
                        float *c, size_t rsc, size_t csc)
{
    if (slot < 0)
        bert__sgemm(ctx, m, n, k, alpha, a, (ptrdiff_t)rsa, (ptrdiff_t)csa, b,
                    (ptrdiff_t)rsb, (ptrdiff_t)csb, beta, c, (ptrdiff_t)rsc,
                    (ptrdiff_t)csc);
    else
        bert__sgemm1(ctx, slot, m, n, k, alpha, a, (ptrdiff_t)rsa,
                     (ptrdiff_t)csa, b, (ptrdiff_t)rsb, (ptrdiff_t)csb, beta,
                     c, (ptrdiff_t)rsc, (ptrdiff_t)csc);
}

#define OPS_REAL float
#define OPS(name) bert__t_##name
#define OPS_GEMM sgemm_layer
#include "libbert/train/ops_impl.h"
