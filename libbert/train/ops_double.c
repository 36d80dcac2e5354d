/* libbert/train/ops_double.c - the trainer's kernels in double precision
 * (bert__td_*, declared in ops.h), compiled into the tests only: checking
 * derivatives against finite differences needs more than float's 7 digits.
 * Dropout masks come from bert__t_keep in ops.c, shared with the float
 * kernels. */
#include <blis.h>

/* BLIS's dgemm, with the caller's rntm_t (NULL or slot >= 0: one thread):
 * libbert's product layer is float only. */
static void dgemm_blis(void *rntm, int slot, size_t m, size_t n, size_t k,
                       double alpha, const double *a, size_t rsa, size_t csa,
                       const double *b, size_t rsb, size_t csb, double beta,
                       double *c, size_t rsc, size_t csc)
{
    rntm_t rn;
    if (rntm && slot < 0)
        rn = *(rntm_t *)rntm;
    else {
        bli_rntm_init(&rn);
        bli_rntm_set_num_threads(1, &rn);
    }
    bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
                 (dim_t)k, &alpha, (double *)a, (inc_t)rsa, (inc_t)csa,
                 (double *)b, (inc_t)rsb, (inc_t)csb, &beta, c, (inc_t)rsc,
                 (inc_t)csc, NULL, &rn);
}

#define OPS_REAL double
#define OPS(name) bert__td_##name
#define OPS_GEMM dgemm_blis
#include "libbert/train/ops_impl.h"
