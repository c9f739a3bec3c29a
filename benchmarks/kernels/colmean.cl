// Column means of a row-major rows x cols data matrix, the first step of a covariance
// (PolyBench's covariance kernel): one column per work-item, an inner loop down the rows,
// consecutive across neighbouring work-items.
kernel void colmean(global const float *data, global float *mean, int rows, int cols)
{
    int j = get_global_id(0);
    if (j >= cols)
        return;
    float sum = 0.0f;
    for (int i = 0; i < rows; i++)
        sum += data[(size_t)i * cols + j];
    mean[j] = sum / (float)rows;
}
