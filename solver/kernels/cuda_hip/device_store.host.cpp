// The host execution target of the device-resident matrix store: the same
// source as the CUDA and HIP builds, compiled by the host C++ compiler. See
// device_store.cu.
#define LITPATH_GPU_HOST 1
#include "kernels/cuda_hip/device_store.cu"
