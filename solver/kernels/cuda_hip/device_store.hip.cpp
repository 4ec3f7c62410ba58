// The HIP build of the device-resident matrix store: the same source as the
// CUDA build, compiled by hipcc. See device_store.cu.
#include "kernels/cuda_hip/device_store.cu"
