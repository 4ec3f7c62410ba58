// gpu-addmin-peak on the host execution target: the same source run on the
// CPU (bench/gpu/run_device.sh's rehearsal; its numbers mean nothing).
#define LITPATH_GPU_HOST 1
#include "bench/gpu_addmin_peak.cu"
