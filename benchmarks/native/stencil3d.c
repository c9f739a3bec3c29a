// One Jacobi step of the 3D Laplace equation (7-point stencil), n^3 grid, x fastest;
// boundary points are copied.
void stencil3d(const float *restrict in, float *restrict out, int n)
{
    const long plane = (long)n * n;
#pragma omp parallel for collapse(2) schedule(static)
    for (int z = 0; z < n; z++) {
        for (int y = 0; y < n; y++) {
            const float *src = in + z * plane + (long)y * n;
            float *dst = out + z * plane + (long)y * n;
            if (z == 0 || y == 0 || z == n - 1 || y == n - 1) {
                for (int x = 0; x < n; x++)
                    dst[x] = src[x];
                continue;
            }
            dst[0] = src[0];
#pragma omp simd
            for (int x = 1; x < n - 1; x++)
                dst[x] = (1.0f / 6.0f) * (((src[x - 1] + src[x + 1]) + (src[x - n] + src[x + n])) +
                                          (src[x - plane] + src[x + plane]));
            dst[n - 1] = src[n - 1];
        }
    }
}
