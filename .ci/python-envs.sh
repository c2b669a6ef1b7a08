#!/usr/bin/env bash
# Python environments for the tests that run PyTorch itself, made offline from the wheel indexes that pip is
# configured with on these machines (`pip config list`); sourced by .ci/run, usable by hand:
#   source .ci/python-envs.sh && echo "$VRAMFIT_TORCH_CPU_PYTHON $VRAMFIT_TORCH_CUDA_PYTHON"
# cpu:  torch 2.13.0 (the CPU build), transformers 5.18.0, peft, timm, pytest: the tracer (python/) and real CPU steps.
# cuda: torch 2.14.1 (the CUDA 13 build) without its cuBLAS, cuDNN and CUDA runtime, which vramfit's stubs stand in
#       for (native/), plus the CUDA libraries it links and vramfit does not stub: the simulated GPU and PyTorch's
#       genuine caching allocator (libc10_cuda.so).
# Each environment is kept under ~/.cache/vramfit/venvs ($XDG_CACHE_HOME/vramfit/venvs where that is set, as the prebuilds'
# root and the CLI's code cache; $VRAMFIT_VENV_ROOT over both), keyed by its requirements, and made again when they change.
# A fresh machine's install is timed with an empty cache: XDG_CACHE_HOME=$(mktemp -d) (pip's own cache follows it too).
# Where one cannot be made (no index, no python3.11), its variable stays unset and the tests that need it say so.

vramfit_venv_root=${VRAMFIT_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/vramfit/venvs}
vramfit_torch_cpu_reqs=(torch==2.13.0 transformers==5.18.0 peft timm pytest)
vramfit_torch_cuda_nodeps=(torch==2.14.1 nvidia-cuda-cupti nvidia-cusparse nvidia-cufft nvidia-cufile nvidia-curand nvidia-cuda-nvrtc
  nvidia-nvjitlink nvidia-cusparselt-cu13 nvidia-nccl-cu13 nvidia-nvshmem-cu13)
vramfit_torch_cuda_reqs=(filelock 'typing-extensions>=4.10' 'setuptools>=77' sympy networkx jinja2 fsspec numpy pytest
  transformers==5.18.0 accelerate pytorch-lightning)

# The configured local indexes as pip arguments: the first as --index-url, so pip never tries its unreachable default.
# A local index (file://) whose folder is missing on this machine is left out.
vramfit_pip_indexes() {
  local urls u
  local -a kept=()
  urls=$(pip config get global.extra-index-url 2>/dev/null || true)
  [[ -n $urls ]] || urls=$(pip config get global.index-url 2>/dev/null || true)
  for u in $urls; do
    [[ $u == file://* && ! -d ${u#file://} ]] && continue
    kept+=("$u")
  done
  ((${#kept[@]})) || return 1
  printf '%s\n' --index-url "${kept[0]}"
  for u in "${kept[@]:1}"; do printf '%s\n' --extra-index-url "$u"; done
}

# Runs pip ("$@") less one warning per package that a local index lacks: pip looks every name up in every index, and
# a file:// index that holds a few packages (here /opt/pypi-more/simple) answers each other name with "WARNING: Location
# 'file:///.../simple/NAME/' is ignored: it is neither a file nor a directory" (216 lines in one fresh CI run). Every
# other line of pip's goes through; the status is pip's.
vramfit_pip() {
  local status
  { "$@" 2>&1 1>&3 3>&- | grep -v "^WARNING: Location 'file://.*' is ignored: it is neither a file nor a directory\.\$" >&2; status=${PIPESTATUS[0]}; } 3>&1
  return "$status"
}

# vramfit_venv NAME "NODEPS..." -- "REQS..." : prints the venv's python once it is complete.
vramfit_venv() {
  local name=$1 dir key
  local -a nodeps=() reqs=() indexes=()
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do nodeps+=("$1"); shift; done
  shift
  reqs=("$@")
  mapfile -t indexes < <(vramfit_pip_indexes) || return 1
  ((${#indexes[@]})) || return 1
  dir="$vramfit_venv_root/$name"
  # (an environment with --no-deps packages also names the order they are installed in: made the old way, it is remade)
  if ((${#nodeps[@]})); then nodeps=(reqs-then-nodeps "${nodeps[@]}"); fi
  key=$(printf '%s\n' "${nodeps[@]}" -- "${reqs[@]}" | sha256sum | cut -c1-16)
  if ((${#nodeps[@]})); then nodeps=("${nodeps[@]:1}"); fi
  if [[ -f $dir/.vramfit-key && $(cat "$dir/.vramfit-key") == "$key" ]]; then
    echo "$dir/bin/python"
    return 0
  fi
  mkdir -p "$vramfit_venv_root"
  # One maker at a time (several shells on one machine source this at once): the others wait, then find it made.
  (
    flock 9
    [[ -f $dir/.vramfit-key && $(cat "$dir/.vramfit-key") == "$key" ]] && exit 0
    rm -rf "$dir"
    python3 -m venv "$dir" >&2 || exit 1
    # --no-compile: pip byte-compiles every module it installs (10,582 in the CPU venv: 51 s of CPU, `python -m compileall`
    # on a copy of its site-packages, scripts/tree-cpu.py); Python compiles the ones a test imports when it first does.
    vramfit_pip "$dir/bin/pip" install -q --disable-pip-version-check --no-compile "${indexes[@]}" "${reqs[@]}" >&2 || exit 1
    # The --no-deps packages go in last: installed first, they would be replaced by whatever the requirements' own
    # resolution picks (torch 2.14.1 needs cuda-bindings, which no local index has, so pip fell back to the CPU build).
    if ((${#nodeps[@]})); then
      vramfit_pip "$dir/bin/pip" install -q --disable-pip-version-check --no-compile "${indexes[@]}" --no-deps "${nodeps[@]}" >&2 || exit 1
      "$dir/bin/python" - "${nodeps[@]}" <<'PY' >&2 || exit 1
import importlib.metadata, sys
for pin in (a for a in sys.argv[1:] if "==" in a):
    name, want = pin.split("==")
    got = importlib.metadata.version(name)
    if got != want:
        sys.exit(f"{name} {got} installed where {want} was asked")
PY
    fi
    echo "$key" >"$dir/.vramfit-key"
  ) 9>"$vramfit_venv_root/.$name.lock" || return 1
  echo "$dir/bin/python"
}

# The two are made at once (mostly pip unpacking wheels: about 2.5 min one after the other on a fresh, quiet machine).
# VRAMFIT_VENVS names which to make and export ("cpu", "cuda": both where unset; "none": neither, only the functions, for
# test/unit/ciPythonEnvs.test.ts): .ci/run makes them in two background jobs, so that pytest, which needs only the CPU
# one, starts as soon as that one is made.
vramfit_wanted=" ${VRAMFIT_VENVS:-cpu cuda} "
vramfit_made=$(mktemp -d)
if [[ $vramfit_wanted == *" cpu "* ]]; then
  vramfit_venv torch-2.13.0-cpu -- "${vramfit_torch_cpu_reqs[@]}" >"$vramfit_made/cpu" &
  vramfit_cpu_pid=$!
fi
if [[ $vramfit_wanted == *" cuda "* ]]; then
  vramfit_venv torch-2.14.1-cuda "${vramfit_torch_cuda_nodeps[@]}" -- "${vramfit_torch_cuda_reqs[@]}" >"$vramfit_made/cuda" &
  vramfit_cuda_pid=$!
fi
if [[ $vramfit_wanted == *" cpu "* ]]; then
  if wait "$vramfit_cpu_pid"; then
    export VRAMFIT_TORCH_CPU_PYTHON=$(cat "$vramfit_made/cpu")
  else
    echo "== could not make the torch 2.13.0 (CPU) environment: the tests that need it skip and say so" >&2
  fi
fi
if [[ $vramfit_wanted == *" cuda "* ]]; then
  if wait "$vramfit_cuda_pid"; then
    export VRAMFIT_TORCH_CUDA_PYTHON=$(cat "$vramfit_made/cuda")
  else
    echo "== could not make the torch 2.14.1 (CUDA 13) environment: the tests that need it skip and say so" >&2
  fi
fi
rm -rf "$vramfit_made"

# The CUDA 13 runtime's headers (the nvidia-cuda-runtime and nvidia-cuda-crt wheels' include/ only: their libcudart.so.13
# must not sit where torch's RPATH would find it before vramfit's stub), for compiling against c10/cuda's headers without
# a CUDA toolkit.
vramfit_cuda_headers() {
  local dir wheel
  local -a indexes pins=(nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88)
  dir="$vramfit_venv_root/cuda-headers-$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-16)"
  if [[ -f $dir/include/cuda_runtime_api.h && -f $dir/include/crt/host_defines.h ]]; then
    echo "$dir/include"
    return 0
  fi
  mapfile -t indexes < <(vramfit_pip_indexes) || return 1
  ((${#indexes[@]})) || return 1
  rm -rf "$dir" && mkdir -p "$dir/wheels" "$dir/include" || return 1
  vramfit_pip pip download -q --disable-pip-version-check "${indexes[@]}" --no-deps "${pins[@]}" -d "$dir/wheels" >&2 || return 1
  for wheel in "$dir"/wheels/*.whl; do
    python3 -m zipfile -e "$wheel" "$dir/x" >&2 || return 1
  done
  cp -r "$dir"/x/nvidia/cu13/include/. "$dir/include/" && rm -rf "$dir/wheels" "$dir/x"
  [[ -f $dir/include/cuda_runtime_api.h && -f $dir/include/crt/host_defines.h ]] && echo "$dir/include"
}
if [[ $vramfit_wanted != *" cuda "* ]]; then
  : # (the headers go with the CUDA environment)
elif inc=$(vramfit_cuda_headers); then
  export VRAMFIT_CUDA_INCLUDE=$inc
else
  echo "== could not fetch the CUDA 13 runtime headers (nvidia-cuda-runtime, nvidia-cuda-crt): the tests that compile against them skip and say so" >&2
fi
