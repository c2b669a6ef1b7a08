#!/usr/bin/env bash
# Times .ci/run's phases before the tests (npm ci, the venvs, the bullseye root, the prebuilds, pytest) in a clean
# `mktemp -d` clone of this repository's HEAD, without the vitest suite: for measuring the installs on a shared machine.
#   bash scripts/ci-phases-time.sh [--fresh] [--no-pytest]
# --fresh: an empty cache (XDG_CACHE_HOME=$(mktemp -d)): the venvs, pip's cache and the root are made anew, as on a
# fresh machine (several GB, removed afterwards). Prints .ci/run's phase lines, the seconds, and the load before and after.
set -u
fresh=0 pytest=1
for arg; do
  case $arg in
    --fresh) fresh=1 ;;
    --no-pytest) pytest=0 ;;
    *) echo "ci-phases-time: unknown argument $arg (expected --fresh, --no-pytest)" >&2; exit 2 ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git clone -q "$repo" "$dir/c" || exit 1
cd "$dir/c"
# No tests: .ci/run starts them after npm ci, beside the installs; here it waits for the installs (and pytest) alone.
sed -i 's|^VRAMFIT_CI_RESOURCES=$resources npm test .*$|status=0; echo "== tests not run"|' .ci/run
((pytest)) || sed -i 's|"$VRAMFIT_TORCH_CPU_PYTHON" -m pytest -q python/tests --junitxml="$pytest_report"|echo "pytest left out"|' .ci/run
if ((fresh)); then export XDG_CACHE_HOME=$dir/cache; mkdir -p "$XDG_CACHE_HOME"; fi
echo "$(git log --oneline -1 | cut -c1-72); cache ${XDG_CACHE_HOME:-$HOME/.cache}; load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
bash .ci/run >"$dir/log" 2>&1
# Without the tests there is no vitest report, and .ci/run's closing line is its fallback "0 passed, 1 failed": left
# out here, as it counts nothing (pytest's own "N passed" line stays).
grep -E '^==|^prebuild:|passed|failed|could not' "$dir/log" | grep -vx '0 passed, 1 failed'
echo "the installs (and pytest) without the tests: $((SECONDS - start)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
