// The host execution target of the GPU backend (--backend gpu-host): the same
// source as the CUDA and HIP builds, compiled by the host C++ compiler and run
// on the CPU through host_runtime.hpp. See minplus.cu.
#define LITPATH_GPU_HOST 1
#include "kernels/cuda_hip/minplus.cu"
