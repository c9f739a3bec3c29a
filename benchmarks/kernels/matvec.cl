// y = A x for a row-major rows x cols matrix: one row per work-item, an inner loop over
// the columns (each work-item streams its own row; x is shared by all).
kernel void matvec(global const float *a, global const float *x, global float *y, int rows,
                   int cols)
{
    int i = get_global_id(0);
    if (i >= rows)
        return;
    global const float *row = a + (size_t)i * cols;
    float sum = 0.0f;
    for (int j = 0; j < cols; j++)
        sum += row[j] * x[j];
    y[i] = sum;
}
