// spirvjit: the host side of the HIP runtime API, declared so that host code of a HIP
// program parses in a device-only compilation. Nothing here is defined: spirvjit
// compiles only the device code, and Python (or a real HIP runtime) does the host's part.
#ifndef SPIRVJIT_HIP_RUNTIME_API_H
#define SPIRVJIT_HIP_RUNTIME_API_H

#include <stddef.h>
#include <stdint.h>

#ifndef __host__
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#endif

typedef enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorMemoryAllocation = 2,
  hipErrorNotInitialized = 3,
  hipErrorInvalidDevice = 101,
  hipErrorNoDevice = 100,
  hipErrorInvalidDeviceFunction = 98,
  hipErrorLaunchFailure = 719,
  hipErrorNotReady = 600,
  hipErrorUnknown = 999,
} hipError_t;

typedef enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
} hipMemcpyKind;

typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
typedef struct ihipModule_t* hipModule_t;
typedef struct ihipModuleSymbol_t* hipFunction_t;
typedef void* hipDeviceptr_t;

struct dim3 {
  uint32_t x, y, z;
  __host__ __device__ constexpr dim3(uint32_t x_ = 1, uint32_t y_ = 1, uint32_t z_ = 1)
      : x(x_), y(y_), z(z_) {}
};

typedef struct hipDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  int computeMode;
  int memoryClockRate;
  int memoryBusWidth;
  int concurrentKernels;
  int pciBusID;
  int pciDeviceID;
  size_t maxSharedMemoryPerMultiProcessor;
  int isMultiGpuBoard;
  int canMapHostMemory;
  int integrated;
  int managedMemory;
  char gcnArchName[256];
} hipDeviceProp_t;

typedef enum hipFuncAttribute {
  hipFuncAttributeMaxDynamicSharedMemorySize = 8,
  hipFuncAttributePreferredSharedMemoryCarveout = 9,
} hipFuncAttribute;
typedef enum hipFuncCache_t {
  hipFuncCachePreferNone = 0,
  hipFuncCachePreferShared = 1,
  hipFuncCachePreferL1 = 2,
  hipFuncCachePreferEqual = 3,
} hipFuncCache_t;
typedef struct hipFuncAttributes {
  int binaryVersion, cacheModeCA;
  size_t constSizeBytes, localSizeBytes;
  int maxDynamicSharedSizeBytes, maxThreadsPerBlock, numRegs, preferredShmemCarveout, ptxVersion;
  size_t sharedSizeBytes;
} hipFuncAttributes;

#define hipHostMallocDefault 0x0
#define hipHostMallocMapped 0x2
#define hipMemAttachGlobal 0x01
#define hipEventDefault 0x0
#define hipStreamDefault 0x00
#define hipStreamNonBlocking 0x01

extern "C" {
hipError_t hipMalloc(void** ptr, size_t size);
hipError_t hipMallocManaged(void** ptr, size_t size, unsigned int flags = hipMemAttachGlobal);
hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags = hipHostMallocDefault);
hipError_t hipMallocHost(void** ptr, size_t size);
hipError_t hipFree(void* ptr);
hipError_t hipHostFree(void* ptr);
hipError_t hipFreeHost(void* ptr);
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                          hipStream_t stream = 0);
hipError_t hipMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                       size_t height, hipMemcpyKind kind);
hipError_t hipMemset(void* dst, int value, size_t bytes);
hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream = 0);
hipError_t hipMemGetInfo(size_t* free, size_t* total);
hipError_t hipMemcpyToSymbol(const void* symbol, const void* src, size_t bytes,
                             size_t offset = 0, hipMemcpyKind kind = hipMemcpyHostToDevice);
hipError_t hipMemcpyFromSymbol(void* dst, const void* symbol, size_t bytes, size_t offset = 0,
                               hipMemcpyKind kind = hipMemcpyDeviceToHost);
hipError_t hipGetSymbolAddress(void** ptr, const void* symbol);
hipError_t hipDeviceSynchronize(void);
hipError_t hipDeviceReset(void);
hipError_t hipGetDevice(int* device);
hipError_t hipSetDevice(int device);
hipError_t hipGetDeviceCount(int* count);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device);
hipError_t hipDeviceGetAttribute(int* value, int attribute, int device);
hipError_t hipGetLastError(void);
hipError_t hipPeekAtLastError(void);
const char* hipGetErrorString(hipError_t error);
const char* hipGetErrorName(hipError_t error);
hipError_t hipStreamCreate(hipStream_t* stream);
hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipEventCreate(hipEvent_t* event);
hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream = 0);
hipError_t hipEventSynchronize(hipEvent_t event);
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipModuleLoad(hipModule_t* module, const char* path);
hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name);
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 hipStream_t stream, void** params, void** extra);
hipError_t hipLaunchKernel(const void* function, dim3 grid, dim3 block, void** args,
                           size_t shared, hipStream_t stream);
// What clang calls for kernel<<<grid, block, shared, stream>>>(...).
hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shared = 0,
                                      hipStream_t stream = 0);
hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shared,
                                     hipStream_t* stream);
hipError_t hipConfigureCall(dim3 grid, dim3 block, size_t shared = 0, hipStream_t stream = 0);
hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags);
hipError_t hipEventQuery(hipEvent_t event);
hipError_t hipDeviceSetCacheConfig(hipFuncCache_t config);
hipError_t hipFuncSetAttribute(const void* function, hipFuncAttribute attribute, int value);
hipError_t hipFuncSetCacheConfig(const void* function, hipFuncCache_t config);
hipError_t hipFuncGetAttributes(hipFuncAttributes* attributes, const void* function);
hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* function,
                                                        int block_size, size_t shared);
hipError_t hipOccupancyMaxPotentialBlockSize(int* grid_size, int* block_size,
                                             const void* function, size_t shared,
                                             int block_size_limit);
}

// Kernel-taking calls accept the kernel itself, as HIP's templates do.
template <class F>
static inline hipError_t hipFuncSetAttribute(F* function, hipFuncAttribute attribute, int value) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(function), attribute, value);
}
template <class F>
static inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F* function,
                                                                      int block_size,
                                                                      size_t shared) {
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(
      blocks, reinterpret_cast<const void*>(function), block_size, shared);
}
template <class F>
static inline hipError_t hipOccupancyMaxPotentialBlockSize(int* grid_size, int* block_size,
                                                           F* function, size_t shared = 0,
                                                           int block_size_limit = 0) {
  return hipOccupancyMaxPotentialBlockSize(grid_size, block_size,
                                           reinterpret_cast<const void*>(function), shared,
                                           block_size_limit);
}

// Typed forms of the C calls above, as HIP's header has them.
template <class T>
static inline hipError_t hipMalloc(T** ptr, size_t size) {
  return hipMalloc(reinterpret_cast<void**>(ptr), size);
}
template <class T>
static inline hipError_t hipMallocManaged(T** ptr, size_t size,
                                          unsigned int flags = hipMemAttachGlobal) {
  return hipMallocManaged(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T>
static inline hipError_t hipHostMalloc(T** ptr, size_t size,
                                       unsigned int flags = hipHostMallocDefault) {
  return hipHostMalloc(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T>
static inline hipError_t hipMemcpyToSymbol(const T& symbol, const void* src, size_t bytes,
                                           size_t offset = 0,
                                           hipMemcpyKind kind = hipMemcpyHostToDevice) {
  return hipMemcpyToSymbol(static_cast<const void*>(&symbol), src, bytes, offset, kind);
}
template <class T>
static inline hipError_t hipMemcpyFromSymbol(void* dst, const T& symbol, size_t bytes,
                                             size_t offset = 0,
                                             hipMemcpyKind kind = hipMemcpyDeviceToHost) {
  return hipMemcpyFromSymbol(dst, static_cast<const void*>(&symbol), bytes, offset, kind);
}

// hipLaunchKernelGGL(kernel, grid, block, shared, stream, args...): a template, so a
// template kernel's name with commas (reduce<float, 256>) needs no parentheses.
template <typename... Args, typename F = void (*)(Args...)>
static inline void hipLaunchKernelGGL(F kernel, const dim3& grid, const dim3& block,
                                      uint32_t shared, hipStream_t stream, Args... args) {
  kernel<<<grid, block, shared, stream>>>(args...);
}

#endif
