// 256-bin histogram of n bytes: each thread counts into a private histogram (plain
// increments, no atomics), then adds it to the shared one.
#include <stdint.h>
#include <string.h>

void histogram(const uint8_t *data, int64_t n, uint32_t *hist)
{
    memset(hist, 0, 256 * sizeof(uint32_t));
#pragma omp parallel
    {
        uint32_t local[256] = {0};
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
            local[data[i]]++;
        for (int b = 0; b < 256; b++) {
#pragma omp atomic
            hist[b] += local[b];
        }
    }
}
