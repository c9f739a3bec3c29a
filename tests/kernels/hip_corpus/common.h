// Shared by the corpus samples, as samples share a "helpers" header.
#pragma once
#include <cstdio>
#include <cstdlib>

#define HIP_CHECK(expr)                                                              \
  do {                                                                               \
    hipError_t status_ = (expr);                                                     \
    if (status_ != hipSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, hipGetErrorString(status_)); \
      std::exit(EXIT_FAILURE);                                                       \
    }                                                                                \
  } while (0)

constexpr unsigned ceil_div(unsigned a, unsigned b) { return (a + b - 1) / b; }
