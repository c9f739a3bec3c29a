// spirvjit's HIP runtime header: the device-side HIP API, written for clang's
// amdgcnspirv target (clang-22 -x hip --offload-arch=amdgcnspirv -nogpuinc), so that
// sources written for ROCm compile without a ROCm install.
//
// Device code uses clang's AMDGCN built-ins (thread ids, barriers, wavefront
// operations) and OpenCL.std math (the __spirv_ocl_* spellings clang's SPIR-V back
// end turns into OpenCL.std instructions). spirvjit maps them to each target.
// Host code (hipMalloc, hipMemcpy, kernel<<<grid, block>>>(...)) is declared so that
// a whole sample parses; with --cuda-device-only it is never compiled.
#ifndef SPIRVJIT_HIP_RUNTIME_H
#define SPIRVJIT_HIP_RUNTIME_H

#if !defined(__HIP__)
#error "spirvjit's hip_runtime.h is for clang's HIP mode (-x hip)"
#endif

#define __HIP_PLATFORM_AMD__ 1
#define __HIP_PLATFORM_HCC__ 1
#define __HIPCC__ 1
#define __SPIRVJIT_HIP__ 1
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 2
#define HIP_VERSION_PATCH 0
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(x) (&(x))

#include <stddef.h>
#include <stdint.h>

#include "hip_runtime_api.h"
#include "hip_vector_types.h"
#include "spirvjit_device.h"
#include "spirvjit_math.h"

#endif
