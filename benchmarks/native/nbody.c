// One step of an all-pairs n-body simulation; pos[i] = (x, y, z, mass), vel[i] =
// (vx, vy, vz, 0), 4 floats per body. The inner loop is a SIMD reduction over bodies.
#include <math.h>

void nbody(const float *restrict pos, const float *restrict vel, float *restrict new_pos,
           float *restrict new_vel, int n, float dt, float eps2)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        float px = pos[4 * i], py = pos[4 * i + 1], pz = pos[4 * i + 2];
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
#pragma omp simd reduction(+ : ax, ay, az)
        for (int j = 0; j < n; j++) {
            float dx = pos[4 * j] - px, dy = pos[4 * j + 1] - py, dz = pos[4 * j + 2] - pz;
            float inv = 1.0f / sqrtf(dx * dx + dy * dy + dz * dz + eps2);
            float s = pos[4 * j + 3] * inv * inv * inv;
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        float vx = vel[4 * i] + ax * dt, vy = vel[4 * i + 1] + ay * dt;
        float vz = vel[4 * i + 2] + az * dt;
        new_vel[4 * i] = vx;
        new_vel[4 * i + 1] = vy;
        new_vel[4 * i + 2] = vz;
        new_vel[4 * i + 3] = vel[4 * i + 3];
        new_pos[4 * i] = px + vx * dt;
        new_pos[4 * i + 1] = py + vy * dt;
        new_pos[4 * i + 2] = pz + vz * dt;
        new_pos[4 * i + 3] = pos[4 * i + 3];
    }
}
