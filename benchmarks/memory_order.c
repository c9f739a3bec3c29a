// The suite's reduction and histogram in the order their OpenCL kernels touch memory,
// against the sequential order of their native C versions (issue 19): how much of the gap
// between spirvjit and native C is the kernels' own access order. One thread, CPU time.
//
//   gcc -O3 -march=native benchmarks/memory_order.c -o /tmp/memory_order -lm && /tmp/memory_order
//
// reduction.cl: work-item g of G = n/16 sums x[g + k*G], k < 16 (a grid-stride loop): per
// step, the W work-items of a SIMD chunk read W consecutive floats of one of 16 rows 4 MB
// apart. Shown for chunks of 8 lanes (AVX2) and 16 and 32 lanes (several chunks in
// lockstep). histogram.cl: work-item g of G = n/64 counts the bytes of words g + k*G, one
// work-item after another (the region with local atomics runs work-item by work-item).
// Each sum is in the kernel's order per lane (no reassociation within a lane).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define N (1 << 24)
#define LOCAL 256
#define PER_ITEM 16

static double cpu_seconds(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static float reduction_kernel_order(const float *x, int lanes)
{
    long items = N / PER_ITEM, groups = items / LOCAL;
    float total = 0.0f;
    for (long g = 0; g < groups; g++) {
        float scratch[LOCAL];
        for (long c = 0; c < LOCAL; c += lanes) {
            float acc[32] = {0};
            for (long k = 0; k < PER_ITEM; k++) {
                const float *p = x + g * LOCAL + c + k * items;
                for (int l = 0; l < lanes; l++)
                    acc[l] += p[l];
            }
            memcpy(scratch + c, acc, lanes * sizeof(float));
        }
        for (int stride = LOCAL / 2; stride > 0; stride /= 2)
            for (int l = 0; l < stride; l++)
                scratch[l] += scratch[l + stride];
        total += scratch[0];
    }
    return total;
}

static float reduction_sequential(const float *x)
{
    float acc[8] = {0};  // what gcc's omp simd reduction does: 8 partial sums
    for (long i = 0; i < N; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += x[i + l];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void histogram_kernel_order(const uint32_t *words, uint32_t *hist)
{
    long n_words = N / 4, items = n_words / PER_ITEM, groups = items / LOCAL;
    for (long g = 0; g < groups; g++) {
        uint32_t bins[256] = {0};
        for (long lid = 0; lid < LOCAL; lid++)
            for (long i = g * LOCAL + lid; i < n_words; i += items) {
                uint32_t w = words[i];
                bins[w & 0xff]++;
                bins[(w >> 8) & 0xff]++;
                bins[(w >> 16) & 0xff]++;
                bins[w >> 24]++;
            }
        for (int b = 0; b < 256; b++)
            hist[b] += bins[b];
    }
}

static void histogram_sequential(const uint8_t *bytes, uint32_t *hist)
{
    uint32_t local[256] = {0};
    for (long i = 0; i < N; i++)
        local[bytes[i]]++;
    for (int b = 0; b < 256; b++)
        hist[b] += local[b];
}

int main(void)
{
    float *x = aligned_alloc(4096, (size_t)N * sizeof(float));
    uint8_t *bytes = aligned_alloc(4096, N);
    uint32_t hist[256];
    srand(1);
    for (long i = 0; i < N; i++) {
        x[i] = (float)rand() / (float)RAND_MAX;
        double e = -48.0 * log((rand() + 1.0) / (RAND_MAX + 2.0));  // skewed, as the suite's
        bytes[i] = e > 255 ? 255 : (uint8_t)e;
    }
    for (int round = 0; round < 3; round++) {
        for (int lanes = 8; lanes <= 32; lanes *= 2) {
            double t = cpu_seconds();
            float r = reduction_kernel_order(x, lanes);
            printf("reduction, kernel order, %2d lanes: %6.1f ms (%g)\n", lanes,
                   1e3 * (cpu_seconds() - t), r);
        }
        double t = cpu_seconds();
        float r = reduction_sequential(x);
        printf("reduction, sequential:              %6.1f ms (%g)\n", 1e3 * (cpu_seconds() - t), r);
        memset(hist, 0, sizeof hist);
        t = cpu_seconds();
        histogram_kernel_order((const uint32_t *)bytes, hist);
        printf("histogram, kernel order:            %6.1f ms (%u)\n", 1e3 * (cpu_seconds() - t),
               hist[1]);
        memset(hist, 0, sizeof hist);
        t = cpu_seconds();
        histogram_sequential(bytes, hist);
        printf("histogram, sequential:              %6.1f ms (%u)\n", 1e3 * (cpu_seconds() - t),
               hist[1]);
    }
    free(x);
    free(bytes);
    return 0;
}
