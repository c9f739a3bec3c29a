// Portable transformer operators, written once in OpenCL C and shipped as one .ubin
// (build.py). Every kernel is float32, row-major and contiguous, and correct for any
// size: the tiled kernels check their bounds, the row kernels loop over any row length.

#define TILE 16
#define GROUP 64

// ---- GELU (the erf form, as torch.nn.functional.gelu) ---------------------------------

__kernel void gelu(__global float *out, __global const float *x, long n) {
    long i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
    }
}

// d gelu(x) / dx = Phi(x) + x * phi(x)
__kernel void gelu_backward(__global float *grad_x, __global const float *grad_out,
                            __global const float *x, long n) {
    long i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        float cdf = 0.5f * (1.0f + erf(v * 0.70710678118654752f));
        float pdf = 0.39894228040143268f * exp(-0.5f * v * v);
        grad_x[i] = grad_out[i] * (cdf + v * pdf);
    }
}

// ---- row reductions: one work-group of GROUP items per row ----------------------------

// The reductions are macros, not functions: spirvjit's CPU backend miscompiled a
// function with barriers called from two call sites in one kernel (issue 12, item 1).
// REDUCE leaves the group's combination of every item's VALUE in RESULT.
#define REDUCE(scratch, value, COMBINE, result)                                     \
    do {                                                                            \
        int lid_ = get_local_id(0);                                                 \
        scratch[lid_] = (value);                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                               \
        for (int stride_ = GROUP / 2; stride_ > 0; stride_ /= 2) {                  \
            if (lid_ < stride_)                                                     \
                scratch[lid_] = COMBINE(scratch[lid_], scratch[lid_ + stride_]);    \
            barrier(CLK_LOCAL_MEM_FENCE);                                           \
        }                                                                           \
        result = scratch[0];                                                        \
        barrier(CLK_LOCAL_MEM_FENCE); /* scratch is reused by the next reduction */ \
    } while (0)

#define ADD(a, b) ((a) + (b))

// Softmax over the last dimension of a (rows, cols) array. global size rows * GROUP.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void softmax(__global float *out, __global const float *x, int cols) {
    __local float scratch[GROUP];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    __global const float *in = x + row * cols;
    __global float *o = out + row * cols;
    float m = -INFINITY;
    for (int c = lid; c < cols; c += GROUP) m = fmax(m, in[c]);
    REDUCE(scratch, m, fmax, m);
    float s = 0.0f;
    for (int c = lid; c < cols; c += GROUP) {
        float e = exp(in[c] - m);
        o[c] = e;
        s += e;
    }
    REDUCE(scratch, s, ADD, s);
    float inv = 1.0f / s;
    for (int c = lid; c < cols; c += GROUP) o[c] *= inv;
}

// grad_x = y * (grad_y - sum(grad_y * y)) per row.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void softmax_backward(__global float *grad_x, __global const float *grad_y,
                      __global const float *y, int cols) {
    __local float scratch[GROUP];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    long base = row * cols;
    float dot = 0.0f;
    for (int c = lid; c < cols; c += GROUP) dot += grad_y[base + c] * y[base + c];
    REDUCE(scratch, dot, ADD, dot);
    for (int c = lid; c < cols; c += GROUP)
        grad_x[base + c] = y[base + c] * (grad_y[base + c] - dot);
}

// Layer norm over the last dimension (biased variance, as torch), with an affine
// weight and bias of length cols. Two passes: the mean, then the centred variance.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void layer_norm(__global float *out, __global const float *x, __global const float *weight,
                __global const float *bias, int cols, float eps) {
    __local float scratch[GROUP];
    long row = get_group_id(0);
    int lid = get_local_id(0);
    __global const float *in = x + row * cols;
    __global float *o = out + row * cols;
    float s = 0.0f;
    for (int c = lid; c < cols; c += GROUP) s += in[c];
    REDUCE(scratch, s, ADD, s);
    float mean = s / cols;
    float v = 0.0f;
    for (int c = lid; c < cols; c += GROUP) {
        float d = in[c] - mean;
        v += d * d;
    }
    REDUCE(scratch, v, ADD, v);
    float rstd = rsqrt(v / cols + eps);
    for (int c = lid; c < cols; c += GROUP) o[c] = (in[c] - mean) * rstd * weight[c] + bias[c];
}

// ---- tiled matrix products, batched over dimension 2 ----------------------------------
// Global size (round_up(N, TILE), round_up(M, TILE), batch), local size (TILE, TILE, 1).

// C[b] = alpha * A[b] @ B[b]^T (+ bias): A is (M, K), B is (N, K), C is (M, N).
// With B a weight of torch's (out, in) layout this is nn.Linear; with B the keys it
// is attention scores Q @ K^T * scale. bias may be NULL.
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void matmul_nt(__global float *C, __global const float *A, __global const float *B,
               __global const float *bias, int M, int N, int K, float alpha) {
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE + 1];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_group_id(0) * TILE + tx, row = get_group_id(1) * TILE + ty;
    long b = get_global_id(2);
    A += b * M * K;
    B += b * N * K;
    C += b * M * N;
    int brow = get_group_id(0) * TILE + ty;  // the B row this item loads
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(long)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (brow < N && k0 + tx < K) ? B[(long)brow * K + k0 + tx] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[tx][k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) C[(long)row * N + col] = alpha * acc + (bias ? bias[col] : 0.0f);
}

// C[b] = A[b] @ B[b]: A is (M, K), B is (K, N), C is (M, N) (attention weights @ values).
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void matmul(__global float *C, __global const float *A, __global const float *B, int M, int N,
            int K) {
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_group_id(0) * TILE + tx, row = get_group_id(1) * TILE + ty;
    long b = get_global_id(2);
    A += b * M * K;
    B += b * K * N;
    C += b * M * N;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(long)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(long)(k0 + ty) * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) C[(long)row * N + col] = acc;
}
