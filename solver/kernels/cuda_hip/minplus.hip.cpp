// The HIP build of the GPU backend: the same source as the CUDA build,
// compiled by hipcc (-x hip). See minplus.cu.
#include "kernels/cuda_hip/minplus.cu"
