// Escape-time Mandelbrot: iterations until |z| > 2, at most max_iter. Contraction is
// off so every multiply and add rounds like the C version (compiled without FMA
// contraction): the iteration counts must then match exactly.
#pragma OPENCL FP_CONTRACT OFF

kernel void mandelbrot(global int *out, float x0, float y0, float dx, float dy, int max_iter)
{
    int px = get_global_id(0);
    int py = get_global_id(1);
    float cr = x0 + (float)px * dx;
    float ci = y0 + (float)py * dy;
    float zr = 0.0f, zi = 0.0f;
    int n = 0;
    while (n < max_iter && zr * zr + zi * zi <= 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        n++;
    }
    out[py * get_global_size(0) + px] = n;
}
