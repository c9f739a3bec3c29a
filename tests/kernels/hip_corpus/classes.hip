// C++ in device code as ported applications write it: classes with constructors,
// methods and operators, function objects passed by value to template kernels (several
// instantiations), lambdas, namespaces, unions, bit-fields, private arrays indexed at
// run time and switch statements.
#include <hip/hip_runtime.h>
#include "common.h"

namespace geometry {

class Complex {
 public:
  __host__ __device__ Complex(float re = 0.0f, float im = 0.0f) : re_(re), im_(im) {}
  __host__ __device__ float real() const { return re_; }
  __host__ __device__ float imag() const { return im_; }
  __host__ __device__ float norm2() const { return re_ * re_ + im_ * im_; }
  __host__ __device__ Complex operator+(const Complex& o) const { return {re_ + o.re_, im_ + o.im_}; }
  __host__ __device__ Complex operator*(const Complex& o) const {
    return {re_ * o.re_ - im_ * o.im_, re_ * o.im_ + im_ * o.re_};
  }
  __host__ __device__ Complex& operator+=(const Complex& o) { return *this = *this + o; }

 private:
  float re_, im_;
};

}  // namespace geometry

// Escape-time iteration with integer inputs scaled by powers of two: every product and
// sum up to the escape test is exact in float, so the count does not depend on fma
// contraction.
__global__ void julia_counts(const int2* points, int* counts, int n, int max_iter) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  using geometry::Complex;
  Complex z(points[i].x / 64.0f, points[i].y / 64.0f);
  const Complex c(-0.5f, 0.25f);
  int k = 0;
  while (k < max_iter && z.norm2() <= 4.0f) {
    z = z * z + c;
    ++k;
  }
  counts[i] = k;
}

// Function objects.
struct Affine {
  float scale, shift;
  __device__ float operator()(float x) const { return scale * x + shift; }
};
struct Clamp {
  int lo, hi;
  __device__ int operator()(int x) const { return x < lo ? lo : (x > hi ? hi : x); }
};
template <typename T>
struct Square {
  __device__ T operator()(T x) const { return x * x; }
};

template <typename T, typename Op>
__global__ void transform(const T* __restrict__ in, T* __restrict__ out, int n, Op op) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = op(in[i]);
}

// A lambda, a union for type punning, and bit-fields.
union FloatBits {
  float f;
  unsigned u;
  struct {
    unsigned mantissa : 23;
    unsigned exponent : 8;
    unsigned sign : 1;
  } parts;
};

__global__ void float_fields(const float* in, unsigned* out, int n) {
  auto index = [] __device__() { return (int)(blockIdx.x * blockDim.x + threadIdx.x); };
  int i = index();
  if (i >= n) return;
  FloatBits bits;
  bits.f = in[i];
  out[3 * i] = bits.parts.sign;
  out[3 * i + 1] = bits.parts.exponent;
  out[3 * i + 2] = bits.parts.mantissa ^ (bits.u >> 23);
}

// Each thread sorts 8 values in a private array (insertion sort, indices known only at
// run time), then picks one by a switch.
__global__ void sort8_select(const int* in, int* sorted, int* picked, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int v[8];
  for (int k = 0; k < 8; ++k) v[k] = in[8 * t + k];
  for (int a = 1; a < 8; ++a) {
    int key = v[a], b = a - 1;
    while (b >= 0 && v[b] > key) {
      v[b + 1] = v[b];
      --b;
    }
    v[b + 1] = key;
  }
  for (int k = 0; k < 8; ++k) sorted[8 * t + k] = v[k];
  int result;
  switch (t % 5) {
    case 0: result = v[0]; break;             // minimum
    case 1: result = v[7]; break;             // maximum
    case 2: result = (v[3] + v[4]) / 2; break;  // median
    case 3: result = v[7] - v[0]; break;      // range
    default: result = v[t % 8]; break;
  }
  picked[t] = result;
}

// A class template with a static member function and a constexpr size.
template <typename T, int N>
class SmallVector {
 public:
  static constexpr int size = N;
  __device__ static SmallVector load(const T* p) {
    SmallVector v;
    for (int k = 0; k < N; ++k) v.data_[k] = p[k];
    return v;
  }
  __device__ T dot(const SmallVector& o) const {
    T s = 0;
    for (int k = 0; k < N; ++k) s += data_[k] * o.data_[k];
    return s;
  }

 private:
  T data_[N];
};

template <typename T, int N>
__global__ void dots(const T* a, const T* b, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    using V = SmallVector<T, N>;
    out[i] = V::load(a + V::size * i).dot(V::load(b + V::size * i));
  }
}

int main() {
  float *x, *y;
  HIP_CHECK(hipMalloc(&x, 1024 * sizeof(float)));
  HIP_CHECK(hipMalloc(&y, 1024 * sizeof(float)));
  transform<<<4, 256>>>(x, y, 1024, Affine{2.0f, 1.0f});
  transform<<<4, 256>>>((int*)x, (int*)y, 1024, Clamp{-10, 10});
  transform<<<4, 256>>>((double*)x, (double*)y, 512, Square<double>{});
  dots<float, 4><<<1, 256>>>(x, x, y, 256);
  dots<long long, 3><<<1, 256>>>((long long*)x, (long long*)x, (long long*)y, 100);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
