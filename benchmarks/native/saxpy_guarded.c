// y = a * x + y over n floats, in place (n need not be a multiple of anything).
#include <stdint.h>

void saxpy_guarded(int64_t n, float a, const float *restrict x, float *restrict y)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
}
