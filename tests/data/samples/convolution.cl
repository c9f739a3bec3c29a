/* Two 2-D convolutions with `__constant` filters:
 * - simpleConvolution follows AMD APP SDK 2.x SimpleConvolution_Kernels.cl (one work-item per
 *   output pixel of a uint image, clamped window, +0.5f and truncation), with the mask in
 *   `__constant` memory (the SDK passes it as `__global float *mask`) and the uint2
 *   dimensions by value as in the SDK;
 * - gaussian5x5 applies a program-scope `__constant float` 5x5 Gaussian table (the filter
 *   the SDK's host builds, normalised by 256) over a 2-D range with a bounds guard, so the
 *   global size may be rounded up to the local size; edges clamp to the border pixel as in
 *   the SDK's image samples. Written for this test in the same style. */
__constant float gauss5[25] = {
    1 / 256.0f, 4 / 256.0f,  6 / 256.0f,  4 / 256.0f,  1 / 256.0f,
    4 / 256.0f, 16 / 256.0f, 24 / 256.0f, 16 / 256.0f, 4 / 256.0f,
    6 / 256.0f, 24 / 256.0f, 36 / 256.0f, 24 / 256.0f, 6 / 256.0f,
    4 / 256.0f, 16 / 256.0f, 24 / 256.0f, 16 / 256.0f, 4 / 256.0f,
    1 / 256.0f, 4 / 256.0f,  6 / 256.0f,  4 / 256.0f,  1 / 256.0f,
};

__kernel void simpleConvolution(__global uint *output, __global uint *input,
                                __constant float *mask, const uint2 inputDimensions,
                                const uint2 maskDimensions)
{
    uint tid = get_global_id(0);

    uint width = inputDimensions.x;
    uint height = inputDimensions.y;

    uint x = tid % width;
    uint y = tid / width;

    uint maskWidth = maskDimensions.x;
    uint maskHeight = maskDimensions.y;

    uint vstep = (maskWidth - 1) / 2;
    uint hstep = (maskHeight - 1) / 2;

    /* find the left, right, top and bottom indices such that the indices do not go beyond
     * image boundaires */
    uint left = (x < vstep) ? 0 : (x - vstep);
    uint right = ((x + vstep) >= width) ? width - 1 : (x + vstep);
    uint top = (y < hstep) ? 0 : (y - hstep);
    uint bottom = ((y + hstep) >= height) ? height - 1 : (y + hstep);

    /* initializing wighted sum value */
    float sumFX = 0;

    for (uint i = left; i <= right; ++i)
        for (uint j = top; j <= bottom; ++j) {
            /* performing wighted sum within the mask boundaries */
            uint maskIndex = (j - (y - hstep)) * maskWidth + (i - (x - vstep));
            uint index = j * width + i;

            sumFX += ((float)input[index] * mask[maskIndex]);
        }

    /* To round to the nearest integer */
    sumFX += 0.5f;
    output[tid] = (uint)sumFX;
}

__kernel void gaussian5x5(__global const uchar4 *in, __global uchar4 *out, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    float4 sum = (float4)(0.0f);
    for (int dy = -2; dy <= 2; dy++) {
        int yy = clamp(y + dy, 0, height - 1);
        for (int dx = -2; dx <= 2; dx++) {
            int xx = clamp(x + dx, 0, width - 1);
            sum = mad(convert_float4(in[yy * width + xx]), (float4)(gauss5[(dy + 2) * 5 + dx + 2]),
                      sum);
        }
    }
    out[y * width + x] = convert_uchar4_sat_rte(sum);
}
