/* Follows Rodinia 3.1 opencl/srad/kernel/kernel_gpu_opencl.cl: srad_kernel (directional
 * derivatives through the iN/iS/jW/jE neighbour tables, ICOV, diffusion coefficient
 * saturated to [0, 1]) and srad2_kernel (divergence and image update), one element per
 * work-item in column-major order with the `ei < d_Ne` guard. As in Rodinia, fp is float and
 * the unsuffixed constants (0.5, 1.0/16.0, 0.25, 1.0) are double, so those steps are
 * computed in double. Differences: NUMBER_THREADS is get_local_size(0) (Rodinia's #define),
 * and the q0sqr statistics come from the host instead of Rodinia's prepare/reduce kernels. */
typedef float fp;

__kernel void srad_kernel(fp d_lambda, int d_Nr, int d_Nc, long d_Ne, __global int *d_iN,
                          __global int *d_iS, __global int *d_jE, __global int *d_jW,
                          __global fp *d_dN, __global fp *d_dS, __global fp *d_dE,
                          __global fp *d_dW, fp d_q0sqr, __global fp *d_c, __global fp *d_I)
{
    int bx = get_group_id(0);
    int tx = get_local_id(0);
    int ei = bx * get_local_size(0) + tx; // more threads than actual elements !!!
    int row;
    int col;

    fp d_Jc;
    fp d_dN_loc, d_dS_loc, d_dW_loc, d_dE_loc;
    fp d_c_loc;
    fp d_G2, d_L, d_num, d_den, d_qsqr;

    // figure out row/col location in new matrix
    row = (ei + 1) % d_Nr - 1;
    col = (ei + 1) / d_Nr + 1 - 1;
    if ((ei + 1) % d_Nr == 0) {
        row = d_Nr - 1;
        col = col - 1;
    }

    if (ei < d_Ne) {
        d_Jc = d_I[ei];

        // directional derivates
        d_dN_loc = d_I[d_iN[row] + d_Nr * col] - d_Jc;
        d_dS_loc = d_I[d_iS[row] + d_Nr * col] - d_Jc;
        d_dW_loc = d_I[row + d_Nr * d_jW[col]] - d_Jc;
        d_dE_loc = d_I[row + d_Nr * d_jE[col]] - d_Jc;

        // normalized discrete gradient mag squared (equ 52,53)
        d_G2 = (d_dN_loc * d_dN_loc + d_dS_loc * d_dS_loc + d_dW_loc * d_dW_loc +
                d_dE_loc * d_dE_loc) / (d_Jc * d_Jc);

        // normalized discrete laplacian (equ 54)
        d_L = (d_dN_loc + d_dS_loc + d_dW_loc + d_dE_loc) / d_Jc;

        // ICOV (equ 31/35)
        d_num = (0.5 * d_G2) - ((1.0 / 16.0) * (d_L * d_L));
        d_den = 1 + (0.25 * d_L);
        d_qsqr = d_num / (d_den * d_den);

        // diffusion coefficent (equ 33)
        d_den = (d_qsqr - d_q0sqr) / (d_q0sqr * (1 + d_q0sqr));
        d_c_loc = 1.0 / (1.0 + d_den);

        // saturate diffusion coefficent to 0-1 range
        if (d_c_loc < 0) {
            d_c_loc = 0;
        } else if (d_c_loc > 1) {
            d_c_loc = 1;
        }

        d_dN[ei] = d_dN_loc;
        d_dS[ei] = d_dS_loc;
        d_dW[ei] = d_dW_loc;
        d_dE[ei] = d_dE_loc;
        d_c[ei] = d_c_loc;
    }
}

__kernel void srad2_kernel(fp d_lambda, int d_Nr, int d_Nc, long d_Ne, __global int *d_iN,
                           __global int *d_iS, __global int *d_jE, __global int *d_jW,
                           __global fp *d_dN, __global fp *d_dS, __global fp *d_dE,
                           __global fp *d_dW, __global fp *d_c, __global fp *d_I)
{
    int bx = get_group_id(0);
    int tx = get_local_id(0);
    int ei = bx * get_local_size(0) + tx;
    int row;
    int col;

    fp d_cN, d_cS, d_cW, d_cE;
    fp d_D;

    row = (ei + 1) % d_Nr - 1;
    col = (ei + 1) / d_Nr + 1 - 1;
    if ((ei + 1) % d_Nr == 0) {
        row = d_Nr - 1;
        col = col - 1;
    }

    if (ei < d_Ne) {
        // diffusion coefficent
        d_cN = d_c[ei];
        d_cS = d_c[d_iS[row] + d_Nr * col];
        d_cW = d_c[ei];
        d_cE = d_c[row + d_Nr * d_jE[col]];

        // divergence (equ 58)
        d_D = d_cN * d_dN[ei] + d_cS * d_dS[ei] + d_cW * d_dW[ei] + d_cE * d_dE[ei];

        // image update (equ 61) (every element of IMAGE)
        d_I[ei] = d_I[ei] + 0.25 * d_lambda * d_D;
    }
}
