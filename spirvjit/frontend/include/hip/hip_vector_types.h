// spirvjit: HIP's vector types (float4, int2, uchar3, ...) and make_<type><n>.
//
// Sizes and alignments are HIP's: a 1-, 2- or 4-vector is sizeof(T) * n bytes aligned
// to its size (clang's ext_vector_type, which also gives .x/.y/.z/.w, element-wise
// arithmetic and scalar operands); a 3-vector is three packed elements aligned to
// sizeof(T), as in HIP (so float3 arrays have a 12-byte stride), with the same
// operators written out.
#ifndef SPIRVJIT_HIP_VECTOR_TYPES_H
#define SPIRVJIT_HIP_VECTOR_TYPES_H

#define __SPIRVJIT_HD __host__ __device__ inline

#define __SPIRVJIT_VEC3_BINOP(V, T, OP)                                        \
  __SPIRVJIT_HD V operator OP(V a, V b) { return V{(T)(a.x OP b.x), (T)(a.y OP b.y), (T)(a.z OP b.z)}; } \
  __SPIRVJIT_HD V operator OP(V a, T s) { return V{(T)(a.x OP s), (T)(a.y OP s), (T)(a.z OP s)}; }       \
  __SPIRVJIT_HD V operator OP(T s, V a) { return V{(T)(s OP a.x), (T)(s OP a.y), (T)(s OP a.z)}; }       \
  __SPIRVJIT_HD V& operator OP##=(V & a, V b) { return a = a OP b; }                      \
  __SPIRVJIT_HD V& operator OP##=(V & a, T s) { return a = a OP s; }

#define __SPIRVJIT_VECTOR_TYPES(T, N)                                                   \
  typedef T N##1 __attribute__((ext_vector_type(1)));                                   \
  typedef T N##2 __attribute__((ext_vector_type(2)));                                   \
  typedef T N##4 __attribute__((ext_vector_type(4)));                                   \
  struct N##3 {                                                                         \
    T x, y, z;                                                                          \
  };                                                                                    \
  __SPIRVJIT_VEC3_BINOP(N##3, T, +)                                                     \
  __SPIRVJIT_VEC3_BINOP(N##3, T, -)                                                     \
  __SPIRVJIT_VEC3_BINOP(N##3, T, *)                                                     \
  __SPIRVJIT_VEC3_BINOP(N##3, T, /)                                                     \
  __SPIRVJIT_HD N##3 operator-(N##3 a) { return N##3{(T)-a.x, (T)-a.y, (T)-a.z}; }               \
  __SPIRVJIT_HD bool operator==(N##3 a, N##3 b) {                                       \
    return a.x == b.x && a.y == b.y && a.z == b.z;                                      \
  }                                                                                     \
  __SPIRVJIT_HD bool operator!=(N##3 a, N##3 b) { return !(a == b); }                   \
  __SPIRVJIT_HD N##1 make_##N##1(T x) { return N##1{x}; }                               \
  __SPIRVJIT_HD N##2 make_##N##2(T x, T y) { return N##2{x, y}; }                       \
  __SPIRVJIT_HD N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }               \
  __SPIRVJIT_HD N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }

__SPIRVJIT_VECTOR_TYPES(signed char, char)
__SPIRVJIT_VECTOR_TYPES(unsigned char, uchar)
__SPIRVJIT_VECTOR_TYPES(short, short)
__SPIRVJIT_VECTOR_TYPES(unsigned short, ushort)
__SPIRVJIT_VECTOR_TYPES(int, int)
__SPIRVJIT_VECTOR_TYPES(unsigned int, uint)
__SPIRVJIT_VECTOR_TYPES(long, long)
__SPIRVJIT_VECTOR_TYPES(unsigned long, ulong)
__SPIRVJIT_VECTOR_TYPES(long long, longlong)
__SPIRVJIT_VECTOR_TYPES(unsigned long long, ulonglong)
__SPIRVJIT_VECTOR_TYPES(float, float)
__SPIRVJIT_VECTOR_TYPES(double, double)

#undef __SPIRVJIT_VECTOR_TYPES
#undef __SPIRVJIT_VEC3_BINOP
#undef __SPIRVJIT_HD
#endif
