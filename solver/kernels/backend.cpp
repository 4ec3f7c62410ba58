// Backend factory: maps the --backend name to an implementation, and says
// clearly when a backend exists in the project but not in this build.
#include "kernels/backend.hpp"

#include <stdexcept>

namespace litpath::apsp {

std::vector<std::pair<std::string, bool>> known_backends() {
    return {{"cpu", true},
            {"reference", true},
            {"cuda", gpu_backend_compiled("cuda")},
            {"hip", gpu_backend_compiled("hip")},
            {"gpu-host", gpu_backend_compiled("gpu-host")}};
}

bool is_gpu_backend(const std::string& name) { return name == "cuda" || name == "hip" || name == "gpu-host"; }

std::unique_ptr<Backend> make_backend(const std::string& name) {
    if (name == "cpu") return make_cpu_backend();
    if (name == "reference") return make_reference_backend();
    if (is_gpu_backend(name)) {
        if (!gpu_backend_compiled(name))
            throw std::runtime_error("backend '" + name + "' not compiled in");
        return make_gpu_backend(name);
    }
    throw std::runtime_error("unknown backend '" + name + "' (choose cpu, reference, cuda, hip or gpu-host)");
}

}  // namespace litpath::apsp
