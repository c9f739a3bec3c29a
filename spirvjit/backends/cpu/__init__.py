"""The host CPU backend: work-group functions, native code through LLVM, a thread pool."""
