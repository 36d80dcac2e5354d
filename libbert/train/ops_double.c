/* libbert/train/ops_double.c - the trainer's kernels in double precision
 * (bert__td_*, declared in ops.h), compiled into the tests only: checking
 * derivatives against finite differences needs more than float's 7 digits.
 * Dropout masks come from bert__t_keep in ops.c, shared with the float
 * kernels. */
#define OPS_REAL double
#define OPS(name) bert__td_##name
#define OPS_GEMM bli_dgemm_ex
#include "libbert/train/ops_impl.h"
