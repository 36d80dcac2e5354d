/* test_kernels.c - the element-wise kernels against hand-computed
 * LayerNorm, GELU (erf and tanh), softmax and bias cases (the matrix
 * products have tests/test_gemm.c).  The kernel sources are compiled into
 * this program (they are internal). */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "libbert/kernels.h"

static void test_layernorm(void)
{
    /* x = [1,2,3,4]: mean 2.5, var 1.25 -> (x-2.5)/sqrt(1.25+eps). */
    float x[8] = {1, 2, 3, 4, 5, 5, 5, 5}, y[8];
    float w[4] = {1, 2, 1, 1}, b[4] = {0, 0, 1, 0};
    bert__layernorm_forward(y, x, w, b, 2, 4, 1e-5f);
    double r = 1.0 / sqrt(1.25 + 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(y[0], -1.5 * r, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 2 * -0.5 * r, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[2], 0.5 * r + 1, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[3], 1.5 * r, 1e-6);
    /* a constant row normalises to the bias */
    CU_ASSERT_DOUBLE_EQUAL(y[4], 0.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[6], 1.0, 1e-6);
    /* add + layernorm, in place */
    float a[4] = {0, 1, 2, 3}, c[4] = {1, 1, 1, 1};
    bert__add_layernorm_forward(a, a, c, w, b, 1, 4, 1e-5f);
    CU_ASSERT_DOUBLE_EQUAL(a[0], -1.5 * r, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(a[3], 1.5 * r, 1e-6);
}

static void test_activations(void)
{
    /* Reference values: torch.nn.functional.gelu (erf and tanh forms). */
    float xs[5] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
    const double erf_ref[5] = {-0.0040496941, -0.15865525, 0.0, 0.34573123,
                               1.9544997};
    const double tanh_ref[5] = {-0.0036373920, -0.15880801, 0.0, 0.34571401,
                                1.9545977};
    float a[5], t[5], r[5];
    for (int i = 0; i < 5; i++)
        a[i] = t[i] = r[i] = xs[i];
    bert__gelu_erf_forward(a, 5);
    bert__gelu_tanh_forward(t, 5);
    bert__relu_forward(r, 5);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_DOUBLE_EQUAL(a[i], erf_ref[i], 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(t[i], tanh_ref[i], 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(r[i], xs[i] > 0 ? xs[i] : 0, 0);
    }
    /* the two GELUs differ: the test can tell them apart */
    CU_ASSERT(fabs(a[0] - t[0]) > 1e-4);
    float th[2] = {0.0f, 1.0f};
    bert__tanh_forward(th, 2);
    CU_ASSERT_DOUBLE_EQUAL(th[1], 0.76159416, 1e-6);
}

static void test_softmax(void)
{
    /* row 0: [1,2,3] -> e^x / sum; row 1 huge values stay finite; row 2
     * masked entirely -> zeros; stride 4. */
    float x[12] = {1, 2, 3, 99, 1000, 1000, 1000, 99, 0, 0, 0, 99};
    bert__softmax_forward(x, 2, 3, 4, 1.0f, NULL);
    double s = exp(1) + exp(2) + exp(3);
    CU_ASSERT_DOUBLE_EQUAL(x[0], exp(1) / s, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(x[2], exp(3) / s, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(x[3], 99, 0); /* padding untouched */
    CU_ASSERT_DOUBLE_EQUAL(x[5], 1.0 / 3, 1e-6);
    float mask[3] = {0, -INFINITY, 0};
    float y[3] = {2, 5, 2};
    bert__softmax_forward(y, 1, 3, 3, 0.5f, mask);
    CU_ASSERT_DOUBLE_EQUAL(y[0], 0.5, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 0.0, 0);
    float allm[3] = {-INFINITY, -INFINITY, -INFINITY};
    bert__softmax_forward(x + 8, 1, 3, 3, 1.0f, allm);
    CU_ASSERT_DOUBLE_EQUAL(x[8], 0.0, 0);
    CU_ASSERT(!isnan(x[9]));
    float bias[3] = {1, 2, 3}, out[6];
    bert__bias_fill(out, bias, 2, 3);
    CU_ASSERT_DOUBLE_EQUAL(out[5], 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 1, 0);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("kernels", NULL, NULL);
    CU_add_test(su, "layernorm", test_layernorm);
    CU_add_test(su, "gelu/relu/tanh", test_activations);
    CU_add_test(su, "softmax and bias", test_softmax);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
