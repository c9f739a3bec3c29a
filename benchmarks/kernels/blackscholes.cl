// European call and put prices (Black-Scholes), one option per work-item, with the
// usual polynomial approximation of the cumulative normal distribution.
#define A1 0.31938153f
#define A2 -0.356563782f
#define A3 1.781477937f
#define A4 -1.821255978f
#define A5 1.330274429f
#define RSQRT2PI 0.39894228040143267794f

static float cnd(float d)
{
    float k = 1.0f / (1.0f + 0.2316419f * fabs(d));
    float w = RSQRT2PI * exp(-0.5f * d * d)
              * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0.0f ? 1.0f - w : w;
}

kernel void blackscholes(global float *call, global float *put, global const float *price,
                         global const float *strike, global const float *years, float r,
                         float v)
{
    size_t i = get_global_id(0);
    float s = price[i], x = strike[i], t = years[i];
    float sqrt_t = sqrt(t);
    float d1 = (log(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
    float d2 = d1 - v * sqrt_t;
    float discount = exp(-r * t);
    call[i] = s * cnd(d1) - x * discount * cnd(d2);
    put[i] = x * discount * cnd(-d2) - s * cnd(-d1);
}
