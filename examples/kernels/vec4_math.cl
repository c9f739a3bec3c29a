// float4 arithmetic and math built-ins: a Gaussian-damped magnitude, scaled by the
// inverse squared length of the whole vector.
kernel void vec4_math(global const float4 *in, global float4 *out)
{
    size_t i = get_global_id(0);
    float4 v = in[i];
    float4 r = sqrt(v * v + 1.0f) * exp(-0.5f * v * v);
    out[i] = r / (1.0f + dot(v, v));
}
