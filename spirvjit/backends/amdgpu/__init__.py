"""The AMD GPU backend (``backend.py``): HSA code objects, libclc math, the HIP runtime."""
