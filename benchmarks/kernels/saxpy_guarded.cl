// saxpy over n floats where n is not a multiple of the work-group size: the global size
// is rounded up and `if (i < n)` guards the last group (the usual OpenCL idiom).
kernel void saxpy_guarded(float a, global const float *x, global float *y, uint n)
{
    size_t i = get_global_id(0);
    if (i < n)
        y[i] = a * x[i] + y[i];
}
