#!/usr/bin/env bash
# What two variables of the caller's environment cost each process CI starts (.ci/run unsets both for the tests):
# NODE_EXTRA_CA_CERTS (Node parses the bundle at every start) and PYTHONDONTWRITEBYTECODE (with the venvs installed
# --no-compile, every Python process compiles what it imports). Prints the CPU seconds (user+sys) of N starts each way.
#   bash scripts/ci-env-cost.sh [--starts N] [--python PYTHON]
# --python: the interpreter whose `import torch` is timed (default $VRAMFIT_TORCH_CPU_PYTHON; left out when unset).
set -u
starts=20
python=${VRAMFIT_TORCH_CPU_PYTHON:-}
while [[ $# -gt 0 ]]; do
  case $1 in
    --starts) starts=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    *) echo "ci-env-cost: unknown argument $1 (expected --starts N, --python PYTHON)" >&2; exit 2 ;;
  esac
done
[[ $starts =~ ^[1-9][0-9]*$ ]] || { echo "ci-env-cost: --starts: expected a whole number above 0, got \"$starts\"" >&2; exit 2; }
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"

# cpu COMMAND...: the CPU seconds (user+sys) of the command and its children.
cpu() { /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.2f", $1 + $2}'; }

certs=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
if [[ -r $certs ]]; then
  with=$(cpu env NODE_EXTRA_CA_CERTS="$certs" bash -c "for i in \$(seq $starts); do node -e 0; done")
  without=$(cpu env -u NODE_EXTRA_CA_CERTS bash -c "for i in \$(seq $starts); do node -e 0; done")
  echo "node -e 0 ×$starts: ${with} s of CPU with NODE_EXTRA_CA_CERTS=$certs, ${without} s without"
else
  echo "node: no CA bundle at $certs to time"
fi

if [[ -n $python && -x $python ]]; then
  # An empty bytecode folder that cannot be written (PYTHONDONTWRITEBYTECODE): every start compiles, as in a fresh
  # --no-compile venv; then one that is written on the first start and read on the others.
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  n=$(( starts < 3 ? starts : 3 ))
  compiled=$(cpu env PYTHONDONTWRITEBYTECODE=1 PYTHONPYCACHEPREFIX="$scratch/never" bash -c "for i in \$(seq $n); do '$python' -c 'import torch'; done")
  env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$scratch/written" "$python" -c 'import torch'
  cached=$(cpu env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$scratch/written" bash -c "for i in \$(seq $n); do '$python' -c 'import torch'; done")
  echo "import torch ×$n ($python): ${compiled} s of CPU compiling every time (PYTHONDONTWRITEBYTECODE), ${cached} s from bytecode written once"
else
  echo "python: none given (--python or VRAMFIT_TORCH_CPU_PYTHON): import torch not timed"
fi
