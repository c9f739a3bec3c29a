// The three kernels of the vecops example package (see examples/vecops/README.md).

// y = a * x + y
kernel void axpy(float a, global const float *x, global float *y, uint n)
{
    size_t i = get_global_id(0);
    if (i < n)
        y[i] = fma(a, x[i], y[i]);
}

// partial[g] = sum of x[i]^2 over the chunk of `chunk` elements work-item g owns
kernel void sum_squares(global const float *x, global float *partial, uint n, uint chunk)
{
    size_t g = get_global_id(0);
    size_t begin = g * chunk;
    size_t end = min((size_t)n, begin + chunk);
    float sum = 0.0f;
    for (size_t i = begin; i < end; ++i)
        sum = fma(x[i], x[i], sum);
    partial[g] = sum;
}

// x *= s
kernel void scale(global float *x, float s, uint n)
{
    size_t i = get_global_id(0);
    if (i < n)
        x[i] *= s;
}
