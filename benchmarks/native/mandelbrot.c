// cflags: -ffp-contract=off
// Escape-time Mandelbrot, width x height pixels, at most max_iter iterations; no FMA
// contraction, so the iteration counts match the OpenCL version exactly.
void mandelbrot(int *out, int width, int height, float x0, float y0, float dx, float dy,
                int max_iter)
{
#pragma omp parallel for schedule(dynamic, 1)
    for (int py = 0; py < height; py++) {
        float ci = y0 + (float)py * dy;
        for (int px = 0; px < width; px++) {
            float cr = x0 + (float)px * dx;
            float zr = 0.0f, zi = 0.0f;
            int n = 0;
            while (n < max_iter && zr * zr + zi * zi <= 4.0f) {
                float t = zr * zr - zi * zi + cr;
                zi = 2.0f * zr * zi + ci;
                zr = t;
                n++;
            }
            out[(long)py * width + px] = n;
        }
    }
}
