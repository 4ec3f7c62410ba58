# GPU backend of apsp-fw: one source (kernels/cuda_hip/minplus.cu,
# device_store.cu) compiled as CUDA by nvcc, as HIP by hipcc, or by the host
# compiler as the host execution target. Included from solver/CMakeLists.txt.
#
#   -DLITPATH_WITH_CUDA=ON [-DLITPATH_CUDA_ARCHS=90]       (CMAKE_CUDA_COMPILER=.../nvcc if not on PATH)
#   -DLITPATH_WITH_HIP=ON  [-DLITPATH_HIP_ARCHS=gfx90a]    (LITPATH_HIPCC=.../hipcc if not on PATH)
#   neither: the host target (--backend gpu-host, kernels/cuda_hip/host_runtime.*) unless
#            -DLITPATH_WITH_GPU_HOST=OFF, so every build runs the GPU source in its tests
#
# HIP is compiled with a custom command rather than enable_language(HIP):
# CMake's HIP language does not find Debian's ROCm layout (docs/design.md §12), while
# `hipcc --offload-arch=... -std=c++17 -c` works everywhere; the object joins
# the kernels library and links against libamdhip64 with the host compiler.

set(LITPATH_CUDA_ARCHS "90" CACHE STRING "CUDA architectures for the GPU backend (CMAKE_CUDA_ARCHITECTURES syntax)")
set(LITPATH_HIP_ARCHS "gfx90a" CACHE STRING "HIP offload architectures for the GPU backend (;-separated)")
option(LITPATH_WITH_GPU_HOST
       "Without CUDA/HIP: the GPU source built for the CPU (--backend gpu-host, the tests' host target)" ON)
set(LITPATH_GPU_AWARE_MPI "AUTO" CACHE STRING
    "AUTO|ON|OFF: report at configure time whether MPI's headers declare GPU support (informational; apsp-fw decides at run time with --gpu-aware-mpi)")

if(LITPATH_WITH_CUDA AND LITPATH_WITH_HIP)
  message(FATAL_ERROR "LITPATH_WITH_CUDA and LITPATH_WITH_HIP are exclusive: build one GPU backend per build tree")
endif()

if(LITPATH_WITH_CUDA)
  # enable_language must run at file scope (this file is include()d).
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${LITPATH_CUDA_ARCHS})
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit QUIET)
endif()

# Adds the GPU backend to `target` (the kernels library) in place of the
# "not compiled in" stub. Sets LITPATH_GPU_BACKEND in the caller ("cuda",
# "hip", "gpu-host" or "").
function(litpath_add_gpu_backend target)
  set(_src ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cuda_hip)
  if(LITPATH_WITH_CUDA)
    target_sources(${target} PRIVATE ${_src}/minplus.cu ${_src}/device_store.cu)
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${LITPATH_CUDA_ARCHS}"
                                               CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3 -Xptxas=-warn-spills>)
    if(TARGET CUDA::cudart_static)
      target_link_libraries(${target} PUBLIC CUDA::cudart_static)
    else()
      # The PyPI wheels (nvidia-cuda-runtime) ship libcudart_static.a but no
      # unversioned libcudart.so, which FindCUDAToolkit requires.
      find_library(LITPATH_CUDART_STATIC NAMES cudart_static REQUIRED
                   HINTS ${CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES} ${CUDAToolkit_LIBRARY_DIR})
      find_package(Threads REQUIRED)
      target_link_libraries(${target} PUBLIC ${LITPATH_CUDART_STATIC} Threads::Threads ${CMAKE_DL_LIBS} rt)
    endif()
    target_compile_definitions(${target} PUBLIC LITPATH_HAVE_GPU=1 LITPATH_GPU_BACKEND_NAME="cuda")
    set(LITPATH_GPU_BACKEND "cuda" PARENT_SCOPE)
    message(STATUS "apsp-fw GPU backend: CUDA ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${LITPATH_CUDA_ARCHS}")
  elseif(LITPATH_WITH_HIP)
    find_program(LITPATH_HIPCC NAMES hipcc HINTS $ENV{ROCM_PATH}/bin /opt/rocm/bin REQUIRED)
    find_library(LITPATH_AMDHIP64 NAMES amdhip64 HINTS $ENV{ROCM_PATH}/lib /opt/rocm/lib REQUIRED)
    set(_arch_flags)
    foreach(_a IN LISTS LITPATH_HIP_ARCHS)
      list(APPEND _arch_flags --offload-arch=${_a})
    endforeach()
    set(_opt -O3)
    if(CMAKE_BUILD_TYPE STREQUAL "Debug")
      set(_opt -O0 -g)
    endif()
    # One object per translation unit: the kernels + Backend, and the device store.
    foreach(_unit minplus device_store)
      set(_obj ${CMAKE_CURRENT_BINARY_DIR}/litpath_${_unit}_hip.o)
      add_custom_command(
        OUTPUT ${_obj}
        COMMAND ${LITPATH_HIPCC} -std=c++17 ${_opt} -fPIC ${_arch_flags} -I${CMAKE_CURRENT_SOURCE_DIR}
                -c ${_src}/${_unit}.hip.cpp -o ${_obj}
        DEPENDS ${_src}/${_unit}.hip.cpp ${_src}/${_unit}.cu ${_src}/runtime.hpp ${_src}/gpu_kernels.hpp
                ${CMAKE_CURRENT_SOURCE_DIR}/kernels/backend.hpp ${CMAKE_CURRENT_SOURCE_DIR}/kernels/matrix_store.hpp
        COMMENT "hipcc ${_arch_flags} kernels/cuda_hip/${_unit}.hip.cpp"
        VERBATIM)
      set_source_files_properties(${_obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
      target_sources(${target} PRIVATE ${_obj})
    endforeach()
    target_link_libraries(${target} PUBLIC ${LITPATH_AMDHIP64})
    target_compile_definitions(${target} PUBLIC LITPATH_HAVE_GPU=1 LITPATH_GPU_BACKEND_NAME="hip")
    set(LITPATH_GPU_BACKEND "hip" PARENT_SCOPE)
    message(STATUS "apsp-fw GPU backend: HIP via ${LITPATH_HIPCC}, architectures ${LITPATH_HIP_ARCHS}")
  elseif(LITPATH_WITH_GPU_HOST)
    # The same kernel lines, compiled by the host compiler and run on the CPU by
    # host_runtime.cpp (fibers for GPU threads, lazily run streams).
    set(_host_units ${_src}/minplus.host.cpp ${_src}/device_store.host.cpp ${_src}/host_runtime.cpp)
    target_sources(${target} PRIVATE ${_host_units})
    # float4 reads of float arrays are the kernels' own idiom; `#pragma unroll`
    # is nvcc's and hipcc's.
    set_source_files_properties(${_host_units} PROPERTIES COMPILE_OPTIONS "-fno-strict-aliasing;-Wno-unknown-pragmas")
    target_compile_definitions(${target} PUBLIC LITPATH_HAVE_GPU=1 LITPATH_GPU_BACKEND_NAME="gpu-host")
    set(LITPATH_GPU_BACKEND "gpu-host" PARENT_SCOPE)
    message(STATUS "apsp-fw GPU backend: the host execution target (--backend gpu-host)")
  else()
    target_sources(${target} PRIVATE ${_src}/not_compiled.cpp)
    set(LITPATH_GPU_BACKEND "" PARENT_SCOPE)
  endif()
endfunction()

# Whether the MPI library is GPU-aware (Open MPI's MPIX_Query_cuda_support /
# MPIX_Query_rocm_support), as far as the headers tell at configure time.
# Informational: apsp-fw --gpu-aware-mpi auto asks the library at run time.
function(litpath_detect_gpu_aware_mpi out)
  set(_aware OFF)
  if(LITPATH_GPU_AWARE_MPI STREQUAL "ON")
    set(_aware ON)
  elseif(LITPATH_GPU_AWARE_MPI STREQUAL "AUTO" AND (LITPATH_WITH_CUDA OR LITPATH_WITH_HIP))
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_CXX)
    if(LITPATH_WITH_CUDA)
      set(_q "MPIX_CUDA_AWARE_SUPPORT")
    else()
      set(_q "MPIX_ROCM_AWARE_SUPPORT")
    endif()
    check_cxx_source_compiles("
      #include <mpi.h>
      #if __has_include(<mpi-ext.h>)
      #include <mpi-ext.h>
      #endif
      #if !defined(${_q}) || !${_q}
      #error not gpu-aware
      #endif
      int main() { return 0; }" LITPATH_MPI_${_q})
    if(LITPATH_MPI_${_q})
      set(_aware ON)
    endif()
  endif()
  set(${out} ${_aware} PARENT_SCOPE)
endfunction()
