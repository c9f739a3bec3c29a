// European call and put prices (Black-Scholes) for n options, with the usual
// polynomial approximation of the cumulative normal distribution.
#include <math.h>
#include <stdint.h>

#define A1 0.31938153f
#define A2 -0.356563782f
#define A3 1.781477937f
#define A4 -1.821255978f
#define A5 1.330274429f
#define RSQRT2PI 0.39894228040143267794f

static inline float cnd(float d)
{
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float w = RSQRT2PI * expf(-0.5f * d * d)
              * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0.0f ? 1.0f - w : w;
}

void blackscholes(float *restrict call, float *restrict put, const float *restrict price,
                  const float *restrict strike, const float *restrict years, int64_t n,
                  float r, float v)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float s = price[i], x = strike[i], t = years[i];
        float sqrt_t = sqrtf(t);
        float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float discount = expf(-r * t);
        call[i] = s * cnd(d1) - x * discount * cnd(d2);
        put[i] = x * discount * cnd(-d2) - s * cnd(-d1);
    }
}
