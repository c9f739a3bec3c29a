// One Jacobi step of the 2D Laplace equation (5-point stencil): each interior point
// becomes the mean of its four neighbours; boundary points are copied. Row-major.
kernel void stencil(global const float *in, global float *out, int nx, int ny)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= nx || y >= ny)
        return;
    int i = y * nx + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = 0.25f * ((in[i - 1] + in[i + 1]) + (in[i - nx] + in[i + nx]));
}
