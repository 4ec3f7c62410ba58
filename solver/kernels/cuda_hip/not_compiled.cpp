// Stub for builds without a GPU backend (LITPATH_WITH_CUDA and LITPATH_WITH_HIP
// OFF): CPU-only builds link and report "backend 'cuda' not compiled in". The
// backend itself is minplus.cu (nvcc) / minplus.hip.cpp (hipcc) in this folder.
#include <stdexcept>

#include "kernels/backend.hpp"

namespace litpath::apsp {

bool gpu_backend_compiled(const std::string&) { return false; }

std::unique_ptr<Backend> make_gpu_backend(const std::string& which) {
    throw std::runtime_error("backend '" + which + "' not compiled in");
}

}  // namespace litpath::apsp
