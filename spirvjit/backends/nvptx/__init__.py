"""The NVIDIA GPU backend (``backend.py``): PTX and cubins, libdevice math, the CUDA driver."""
