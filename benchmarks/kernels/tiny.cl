// The smallest useful kernel: one store. Launched with one work-item to measure the
// launch overhead.
kernel void tiny(global int *out, int value)
{
    out[get_global_id(0)] = value;
}
