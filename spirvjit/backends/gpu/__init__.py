"""What the AMD and NVIDIA backends share: the ABI base, entry points, math libraries,
driver contexts and launches."""
