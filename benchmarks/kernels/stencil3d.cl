// One Jacobi step of the 3D Laplace equation (7-point stencil) on an n^3 grid, x fastest;
// boundary points are copied. A 3-D NDRange, guarded like the 2-D stencil.
kernel void stencil3d(global const float *in, global float *out, int n)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    int z = get_global_id(2);
    if (x >= n || y >= n || z >= n)
        return;
    size_t plane = (size_t)n * n;
    size_t i = z * plane + (size_t)y * n + x;
    if (x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = (1.0f / 6.0f) * (((in[i - 1] + in[i + 1]) + (in[i - n] + in[i + n])) +
                              (in[i - plane] + in[i + plane]));
}
