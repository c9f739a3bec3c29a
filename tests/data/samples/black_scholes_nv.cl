/* Follows the NVIDIA OpenCL SDK's oclBlackScholes (BlackScholes.cl): scalar options, a
 * grid-stride loop over optN, the body in an inline helper writing through `__global float *`
 * element pointers, and the polynomial CND with a branch on the sign. Difference: -DNATIVE
 * spells exp/log/sqrt/division as native_exp/native_log/native_sqrt/native_divide and the
 * polynomial with mad, as fast-math ports of the sample do. */
#ifdef NATIVE
#define EXP native_exp
#define LOG native_log
#define SQRT native_sqrt
#define DIV native_divide
#define MAD mad
#else
#define EXP exp
#define LOG log
#define SQRT sqrt
#define DIV(a, b) ((a) / (b))
#define MAD(a, b, c) ((a) * (b) + (c))
#endif

inline float cnd(float d)
{
    const float A1 = 0.31938153f;
    const float A2 = -0.356563782f;
    const float A3 = 1.781477937f;
    const float A4 = -1.821255978f;
    const float A5 = 1.330274429f;
    const float RSQRT2PI = 0.39894228040143267793994605993438f;

    float K = DIV(1.0f, (1.0f + 0.2316419f * fabs(d)));

    float cnd = RSQRT2PI * EXP(-0.5f * d * d) *
                (K * MAD(K, MAD(K, MAD(K, MAD(K, A5, A4), A3), A2), A1));

    if (d > 0)
        cnd = 1.0f - cnd;

    return cnd;
}

inline void BlackScholesBody(__global float *call, __global float *put, float S, float X,
                             float T, float R, float V)
{
    float sqrtT = SQRT(T);
    float d1 = DIV(LOG(DIV(S, X)) + (R + 0.5f * V * V) * T, V * sqrtT);
    float d2 = d1 - V * sqrtT;
    float CNDD1 = cnd(d1);
    float CNDD2 = cnd(d2);

    float expRT = EXP(-R * T);
    *call = (S * CNDD1 - X * expRT * CNDD2);
    *put = (X * expRT * (1.0f - CNDD2) - S * (1.0f - CNDD1));
}

__kernel void BlackScholes(__global float *d_Call, __global float *d_Put, __global float *d_S,
                           __global float *d_X, __global float *d_T, float R, float V,
                           unsigned int optN)
{
    for (unsigned int opt = get_global_id(0); opt < optN; opt += get_global_size(0))
        BlackScholesBody(&d_Call[opt], &d_Put[opt], d_S[opt], d_X[opt], d_T[opt], R, V);
}
