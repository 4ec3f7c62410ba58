// Stub for builds without a GPU backend. The GPU min-plus kernel will live in
// this folder as one source compiled twice (nvcc for CUDA, hipcc for HIP)
// behind a small portability header; until then CPU-only builds link and
// report "backend 'cuda' not compiled in".
#include <stdexcept>

#include "kernels/backend.hpp"

namespace litpath::apsp {

bool gpu_backend_compiled(const std::string&) { return false; }

std::unique_ptr<Backend> make_gpu_backend(const std::string& which) {
    throw std::runtime_error("backend '" + which + "' not compiled in");
}

}  // namespace litpath::apsp
