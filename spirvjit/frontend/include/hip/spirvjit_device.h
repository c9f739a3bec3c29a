// spirvjit: HIP's device built-ins from clang's AMDGCN built-ins: thread and block
// ids and sizes, barriers and fences, atomics, wavefront (warp) operations, integer
// intrinsics. Semantics follow the HIP programming guide.
#ifndef SPIRVJIT_HIP_DEVICE_H
#define SPIRVJIT_HIP_DEVICE_H

#define __SPIRVJIT_D static __device__ inline __attribute__((always_inline))

// --- thread and block ids, sizes -------------------------------------------------------
// threadIdx.x etc. are properties, read through the built-ins, as in HIP's own header.
// Block counts come from the code object v5 implicit arguments (full blocks + a partial
// one), group sizes from the dispatch packet: spirvjit fills both on every target.
__SPIRVJIT_D unsigned __spirvjit_group_size(int d) {
  return d == 0 ? __builtin_amdgcn_workgroup_size_x()
                : (d == 1 ? __builtin_amdgcn_workgroup_size_y()
                          : __builtin_amdgcn_workgroup_size_z());
}
__SPIRVJIT_D unsigned __spirvjit_num_groups(int d) {
  const unsigned* blocks = (const unsigned*)__builtin_amdgcn_implicitarg_ptr();
  const unsigned short* rest = (const unsigned short*)__builtin_amdgcn_implicitarg_ptr();
  return blocks[d] + (rest[9 + d] != 0);
}

#define __SPIRVJIT_BUILTIN_VAR(NAME, TYPE, X, Y, Z)                     \
  struct TYPE {                                                        \
    static __device__ unsigned __get_x() { return X; }                  \
    static __device__ unsigned __get_y() { return Y; }                  \
    static __device__ unsigned __get_z() { return Z; }                  \
    __declspec(property(get = __get_x)) unsigned x;                    \
    __declspec(property(get = __get_y)) unsigned y;                    \
    __declspec(property(get = __get_z)) unsigned z;                    \
    __device__ operator dim3() const { return dim3(X, Y, Z); }         \
  };                                                                   \
  extern const __device__ __attribute__((weak)) TYPE NAME;

__SPIRVJIT_BUILTIN_VAR(threadIdx, __spirvjit_thread_idx, __builtin_amdgcn_workitem_id_x(),
                       __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z())
__SPIRVJIT_BUILTIN_VAR(blockIdx, __spirvjit_block_idx, __builtin_amdgcn_workgroup_id_x(),
                       __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z())
__SPIRVJIT_BUILTIN_VAR(blockDim, __spirvjit_block_dim, __spirvjit_group_size(0),
                       __spirvjit_group_size(1), __spirvjit_group_size(2))
__SPIRVJIT_BUILTIN_VAR(gridDim, __spirvjit_grid_dim, __spirvjit_num_groups(0),
                       __spirvjit_num_groups(1), __spirvjit_num_groups(2))
#undef __SPIRVJIT_BUILTIN_VAR

#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

// The wavefront size: 64 for amdgcnspirv code on every target but AMD GPUs in wave32
// mode, where the AMD target's own value is read.
#define warpSize (__builtin_amdgcn_wavefrontsize())

// --- synchronization -------------------------------------------------------------------
__SPIRVJIT_D void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__SPIRVJIT_D void __threadfence_block() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
__SPIRVJIT_D void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
__SPIRVJIT_D void __threadfence_system() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }

// --- atomics ---------------------------------------------------------------------------
// The value operands take the pointee's type without deducing it (as HIP's overloads for
// each type do): `atomicAdd(unsigned_ptr, 1)` and `atomicCAS(ull_ptr, assumed,
// __double_as_longlong(v))` (a long long) convert their operands instead of failing to
// deduce T.
template <class T>
struct __spirvjit_operand {
  typedef T type;
};
template <class T>
using __spirvjit_operand_t = typename __spirvjit_operand<T>::type;
#define __SPIRVJIT_SCOPED_ATOMICS(SUFFIX, SCOPE)                                              \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicAdd##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                         \
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, SCOPE);                             \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicSub##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                         \
    return __hip_atomic_fetch_add(p, (T)-v, __ATOMIC_RELAXED, SCOPE);                         \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicExch##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                        \
    return __hip_atomic_exchange(p, v, __ATOMIC_RELAXED, SCOPE);                              \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicMin##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                         \
    return __hip_atomic_fetch_min(p, v, __ATOMIC_RELAXED, SCOPE);                             \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicMax##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                         \
    return __hip_atomic_fetch_max(p, v, __ATOMIC_RELAXED, SCOPE);                             \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicAnd##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                         \
    return __hip_atomic_fetch_and(p, v, __ATOMIC_RELAXED, SCOPE);                             \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicOr##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                          \
    return __hip_atomic_fetch_or(p, v, __ATOMIC_RELAXED, SCOPE);                              \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicXor##SUFFIX(T* p, __spirvjit_operand_t<T> v) {                         \
    return __hip_atomic_fetch_xor(p, v, __ATOMIC_RELAXED, SCOPE);                             \
  }                                                                                           \
  template <class T>                                                                          \
  __SPIRVJIT_D T atomicCAS##SUFFIX(T* p, __spirvjit_operand_t<T> compare, __spirvjit_operand_t<T> v) { \
    __hip_atomic_compare_exchange_strong(p, &compare, v, __ATOMIC_RELAXED, __ATOMIC_RELAXED,  \
                                         SCOPE);                                              \
    return compare;                                                                           \
  }                                                                                           \
  /* atomicInc/atomicDec wrap at v, as on the GPU: old >= v ? 0 : old + 1, and                \
     (old == 0 || old > v) ? v : old - 1. */                                                  \
  __SPIRVJIT_D unsigned atomicInc##SUFFIX(unsigned* p, unsigned v) {                          \
    unsigned old = __hip_atomic_load(p, __ATOMIC_RELAXED, SCOPE);                             \
    while (!__hip_atomic_compare_exchange_weak(p, &old, old >= v ? 0u : old + 1u,             \
                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED, SCOPE)) {  \
    }                                                                                         \
    return old;                                                                               \
  }                                                                                           \
  __SPIRVJIT_D unsigned atomicDec##SUFFIX(unsigned* p, unsigned v) {                          \
    unsigned old = __hip_atomic_load(p, __ATOMIC_RELAXED, SCOPE);                             \
    while (!__hip_atomic_compare_exchange_weak(p, &old, (old == 0u || old > v) ? v : old - 1u, \
                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED, SCOPE)) {  \
    }                                                                                         \
    return old;                                                                               \
  }

__SPIRVJIT_SCOPED_ATOMICS(, __HIP_MEMORY_SCOPE_AGENT)
__SPIRVJIT_SCOPED_ATOMICS(_system, __HIP_MEMORY_SCOPE_SYSTEM)
__SPIRVJIT_SCOPED_ATOMICS(_block, __HIP_MEMORY_SCOPE_WORKGROUP)
#undef __SPIRVJIT_SCOPED_ATOMICS

// --- wavefront (warp) operations -------------------------------------------------------
// Lanes are numbered within the wavefront; masks are 64-bit, as on AMD GPUs.
__SPIRVJIT_D unsigned __lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
__SPIRVJIT_D unsigned long long __ballot(int predicate) {
  return __builtin_amdgcn_ballot_w64(predicate != 0);
}
__SPIRVJIT_D unsigned long long __ballot64(int predicate) { return __ballot(predicate); }
__SPIRVJIT_D unsigned long long __activemask() { return __ballot(1); }
__SPIRVJIT_D int __any(int predicate) { return __ballot(predicate) != 0; }
__SPIRVJIT_D int __all(int predicate) { return __ballot(predicate) == __ballot(1); }
__SPIRVJIT_D unsigned long long __ballot_sync(unsigned long long mask, int predicate) {
  return __ballot(predicate) & mask;
}
__SPIRVJIT_D int __any_sync(unsigned long long mask, int predicate) {
  return (__ballot(predicate) & mask) != 0;
}
__SPIRVJIT_D int __all_sync(unsigned long long mask, int predicate) {
  return (__ballot(predicate) & mask) == (__ballot(1) & mask);
}
__SPIRVJIT_D void __syncwarp(unsigned long long mask = ~0ull) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

// Shuffles read another lane's value with ds_bpermute (a byte address: lane * 4). A
// source lane outside the caller's width-wide segment reads the caller's own value.
__SPIRVJIT_D int __spirvjit_bpermute(int lane, int value) {
  return __builtin_amdgcn_ds_bpermute(lane << 2, value);
}
__SPIRVJIT_D int __shfl(int var, int src_lane, int width = warpSize) {
  int self = __lane_id();
  return __spirvjit_bpermute((src_lane & (width - 1)) + (self & -width), var);
}
__SPIRVJIT_D int __shfl_up(int var, unsigned int delta, int width = warpSize) {
  int self = __lane_id();
  int lane = self - (int)delta;
  return __spirvjit_bpermute(lane < (self & -width) ? self : lane, var);
}
__SPIRVJIT_D int __shfl_down(int var, unsigned int delta, int width = warpSize) {
  int self = __lane_id();
  int lane = (int)((self & (width - 1)) + delta) >= width ? self : self + (int)delta;
  return __spirvjit_bpermute(lane, var);
}
__SPIRVJIT_D int __shfl_xor(int var, int mask, int width = warpSize) {
  int self = __lane_id();
  int lane = self ^ mask;
  return __spirvjit_bpermute(lane >= ((self + width) & -width) ? self : lane, var);
}

// Other types go through int: 32-bit ones as their bits, 64-bit ones as two halves.
#define __SPIRVJIT_SHUFFLE32(T, ARG, A)                                                   \
  __SPIRVJIT_D T __shfl##ARG(T var, A arg, int width = warpSize) {                         \
    return __builtin_bit_cast(T, __shfl##ARG(__builtin_bit_cast(int, var), arg, width));   \
  }
#define __SPIRVJIT_SHUFFLE64(T, ARG, A)                                                   \
  __SPIRVJIT_D T __shfl##ARG(T var, A arg, int width = warpSize) {                         \
    unsigned long long bits = __builtin_bit_cast(unsigned long long, var);                 \
    unsigned lo = (unsigned)__shfl##ARG((int)(unsigned)bits, arg, width);                  \
    unsigned hi = (unsigned)__shfl##ARG((int)(unsigned)(bits >> 32), arg, width);          \
    return __builtin_bit_cast(T, ((unsigned long long)hi << 32) | lo);                     \
  }
#define __SPIRVJIT_SHUFFLE_TYPES(ARG, A)          \
  __SPIRVJIT_SHUFFLE32(unsigned int, ARG, A)      \
  __SPIRVJIT_SHUFFLE32(float, ARG, A)             \
  __SPIRVJIT_SHUFFLE64(double, ARG, A)            \
  __SPIRVJIT_SHUFFLE64(long, ARG, A)              \
  __SPIRVJIT_SHUFFLE64(unsigned long, ARG, A)     \
  __SPIRVJIT_SHUFFLE64(long long, ARG, A)         \
  __SPIRVJIT_SHUFFLE64(unsigned long long, ARG, A)
__SPIRVJIT_SHUFFLE_TYPES(, int)
__SPIRVJIT_SHUFFLE_TYPES(_up, unsigned int)
__SPIRVJIT_SHUFFLE_TYPES(_down, unsigned int)
__SPIRVJIT_SHUFFLE_TYPES(_xor, int)
#undef __SPIRVJIT_SHUFFLE_TYPES
#undef __SPIRVJIT_SHUFFLE32
#undef __SPIRVJIT_SHUFFLE64

// The _sync forms (HIP 6.2+): the mask names the lanes taking part; every lane does here.
#define __shfl_sync(mask, ...) __shfl(__VA_ARGS__)
#define __shfl_up_sync(mask, ...) __shfl_up(__VA_ARGS__)
#define __shfl_down_sync(mask, ...) __shfl_down(__VA_ARGS__)
#define __shfl_xor_sync(mask, ...) __shfl_xor(__VA_ARGS__)

// __reduce_{add,min,max,and,or,xor}_sync (HIP 6.2+, CUDA sm_80): the reduction over the
// lanes the mask names, given to each of them. As in HIP the mask must be 64 bits (a
// CUDA 0xffffffff names only lanes 0-31 of a 64-lane wavefront). Each named lane's value
// is read with one shuffle, in lane order: exact for any mask (no lane outside it is
// read), one exchange per lane. and/or/xor are bitwise, as in CUDA. A mask naming no lane
// is undefined, as in CUDA.
template <class MaskT, class T, class Op>
__SPIRVJIT_D T __spirvjit_reduce_sync(MaskT mask, T value, Op op) {
  static_assert(sizeof(MaskT) == 8 && (MaskT)-1 > 0,
                "The mask must be a 64-bit unsigned integer (HIP's rule); a 32-bit CUDA "
                "mask names only half of a 64-lane wavefront");
  unsigned long long rest = mask;
  if (warpSize == 32) rest &= 0xffffffffull;  // lanes 32-63 do not exist (HIP does so too)
  T result = __shfl(value, __builtin_ctzll(rest));
  for (rest &= rest - 1; rest != 0; rest &= rest - 1)
    result = op(result, __shfl(value, __builtin_ctzll(rest)));
  return result;
}
#define __SPIRVJIT_REDUCE_SYNC(NAME, T, EXPR)                                        \
  template <class MaskT>                                                           \
  __SPIRVJIT_D T __reduce_##NAME##_sync(MaskT mask, T value) {                      \
    return __spirvjit_reduce_sync(mask, value, [](T a, T b) -> T { return EXPR; }); \
  }
__SPIRVJIT_REDUCE_SYNC(add, int, a + b)
__SPIRVJIT_REDUCE_SYNC(add, unsigned, a + b)
__SPIRVJIT_REDUCE_SYNC(min, int, b < a ? b : a)
__SPIRVJIT_REDUCE_SYNC(min, unsigned, b < a ? b : a)
__SPIRVJIT_REDUCE_SYNC(max, int, a < b ? b : a)
__SPIRVJIT_REDUCE_SYNC(max, unsigned, a < b ? b : a)
__SPIRVJIT_REDUCE_SYNC(and, unsigned, a & b)
__SPIRVJIT_REDUCE_SYNC(or, unsigned, a | b)
__SPIRVJIT_REDUCE_SYNC(xor, unsigned, a ^ b)
#undef __SPIRVJIT_REDUCE_SYNC

// --- integer intrinsics ----------------------------------------------------------------
__SPIRVJIT_D int __popc(unsigned x) { return __builtin_popcount(x); }
__SPIRVJIT_D int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__SPIRVJIT_D int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
__SPIRVJIT_D int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
__SPIRVJIT_D int __ffs(int x) { return __builtin_ffs(x); }
__SPIRVJIT_D int __ffsll(long long x) { return __builtin_ffsll(x); }
__SPIRVJIT_D unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
__SPIRVJIT_D unsigned long long __brevll(unsigned long long x) {
  return __builtin_bitreverse64(x);
}
__SPIRVJIT_D int __mul24(int x, int y) { return ((x << 8) >> 8) * ((y << 8) >> 8); }
__SPIRVJIT_D unsigned __umul24(unsigned x, unsigned y) {
  return (x & 0xffffffu) * (y & 0xffffffu);
}
__SPIRVJIT_D int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
__SPIRVJIT_D unsigned __umulhi(unsigned x, unsigned y) {
  return (unsigned)(((unsigned long long)x * y) >> 32);
}
__SPIRVJIT_D long long __mul64hi(long long x, long long y) {
  return (long long)(((__int128)x * y) >> 64);
}
__SPIRVJIT_D unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
__SPIRVJIT_D unsigned __sad(int x, int y, unsigned z) {
  // |x - y| exactly (PTX sad.s32). x - y in int can overflow: UB, which LLVM may fold
  // to llvm.abs(x - y) (the quick tier gave 0x10000000 for __sad(INT_MIN, 0x70000000,
  // 0)). Unsigned subtraction gives the difference modulo 2^32, and it is below 2^32.
  return z + (x > y ? (unsigned)x - (unsigned)y : (unsigned)y - (unsigned)x);
}
__SPIRVJIT_D unsigned __usad(unsigned x, unsigned y, unsigned z) {
  return z + (x > y ? x - y : y - x);
}
__SPIRVJIT_D int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
__SPIRVJIT_D int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
__SPIRVJIT_D unsigned __uhadd(unsigned x, unsigned y) {
  return (unsigned)(((unsigned long long)x + y) >> 1);
}
__SPIRVJIT_D unsigned __urhadd(unsigned x, unsigned y) {
  return (unsigned)(((unsigned long long)x + y + 1) >> 1);
}
// Bit fields and funnel shifts, through the AMD built-ins HIP uses for them.
__SPIRVJIT_D unsigned __bitextract_u32(unsigned src, unsigned offset, unsigned width) {
  return __builtin_amdgcn_ubfe(src, offset, width);
}
__SPIRVJIT_D int __bitextract_s32(int src, unsigned offset, unsigned width) {
  return __builtin_amdgcn_sbfe(src, offset, width);
}
__SPIRVJIT_D unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return __builtin_amdgcn_alignbit(hi, lo, shift);
}
__SPIRVJIT_D unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  return shift >= 32 ? hi : __builtin_amdgcn_alignbit(hi, lo, shift);
}
__SPIRVJIT_D unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)(((((unsigned long long)hi << 32) | lo) << (shift & 31)) >> 32);
}
__SPIRVJIT_D unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  return shift >= 32 ? lo : __funnelshift_l(lo, hi, shift);
}

// __ldg (CUDA's read-only data cache load, which hipify keeps): a plain load, as in HIP.
template <class T>
__SPIRVJIT_D T __ldg(const T* p) {
  return *p;
}

__SPIRVJIT_D long long clock64() { return (long long)__builtin_readcyclecounter(); }
__SPIRVJIT_D long long wall_clock64() { return (long long)__builtin_readcyclecounter(); }
__SPIRVJIT_D unsigned clock() { return (unsigned)__builtin_readcyclecounter(); }

// __syncthreads_count/_and/_or: a barrier that also counts the true predicates.
__SPIRVJIT_D int __syncthreads_count(int predicate) {
  __shared__ int count;
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) count = 0;
  __syncthreads();
  if (predicate) __hip_atomic_fetch_add(&count, 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __syncthreads();
  int result = count;
  __syncthreads();
  return result;
}
__SPIRVJIT_D int __syncthreads_and(int predicate) {
  return __syncthreads_count(!predicate) == 0;
}
__SPIRVJIT_D int __syncthreads_or(int predicate) { return __syncthreads_count(predicate) != 0; }

// --- device heap --------------------------------------------------------------------------
// malloc/free in device code, as ROCm's header defines them (through __hip_malloc): the
// host CPU's C library; GPUs refuse them by name (translate/hip_heap.py). Imports must
// have default visibility: clang-22's SPIR-V back end stops on a hidden declaration
// ("Unknown function"; HIP's -fvisibility=hidden makes every one hidden). Fixed upstream
// by llvm/llvm-project#185029 (hidden declarations become Import linkage) and #191820
// (the HIP driver no longer defaults amdgcnspirv to hidden visibility).
extern "C" __device__ __attribute__((visibility("default"))) void* __spirvjit_malloc(size_t size);
extern "C" __device__ __attribute__((visibility("default"))) void __spirvjit_free(void* ptr);
static __device__ inline void* malloc(size_t size) { return __spirvjit_malloc(size); }
static __device__ inline void free(void* ptr) { __spirvjit_free(ptr); }

// --- printf and assert ------------------------------------------------------------------
// Device-side printf: clang lowers it to AMD's hostcall protocol (__ockl_printf_*),
// which translate/hip_printf.py turns into one printf call per device printf.
extern "C" __device__ int printf(const char* format, ...);
// A failed assert() prints the condition and traps, as HIP's own header does: on the
// host CPU that stops the process like abort() (compile with -DNDEBUG to drop asserts).
__device__ static inline __attribute__((noreturn)) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) {
  printf("%s:%u: %s: Device-side assertion `%s' failed.\n", file, line, function, assertion);
  __builtin_trap();
}

#undef __SPIRVJIT_D
#endif
