// One Jacobi step of the 2D Laplace equation (5-point stencil), row-major nx columns;
// boundary points are copied.
void stencil(const float *restrict in, float *restrict out, int nx, int ny)
{
#pragma omp parallel for schedule(static)
    for (int y = 0; y < ny; y++) {
        const float *row = in + (long)y * nx;
        float *dst = out + (long)y * nx;
        if (y == 0 || y == ny - 1) {
            for (int x = 0; x < nx; x++)
                dst[x] = row[x];
            continue;
        }
        dst[0] = row[0];
#pragma omp simd
        for (int x = 1; x < nx - 1; x++)
            dst[x] = 0.25f * ((row[x - 1] + row[x + 1]) + (row[x - nx] + row[x + nx]));
        dst[nx - 1] = row[nx - 1];
    }
}
