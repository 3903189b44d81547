#!/usr/bin/env bash
# Installs what Nexus needs on a fresh Debian machine and skips what is there:
# FreeCAD (the reference host), Xvfb (FreeCAD's GUI renders), Chromium (browser
# tests), Redis (the multi-replica bus), PostgreSQL (the tests run the audit log
# and run history on it as well as on the embedded SQLite file), nginx (the
# plain forwarding proxy nexus bench measures beside the mesh), mypy (the type
# check of the host kit's Python in the tests), and the npm
# packages of the web UI and of the MCP client tests from their lockfiles. Safe
# to run again. With --run only what make run needs: FreeCAD, Xvfb and the web
# UI's packages, none of the tests'.
set -euo pipefail
cd "$(dirname "$0")/.."
run_only=false
[ "${1:-}" = --run ] && run_only=true

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "install-deps: need root to run: $*" >&2; return 1; fi
}

packages=(freecad xvfb xauth chromium redis-server postgresql python3 nginx mypy zip)
$run_only && packages=(freecad xvfb xauth python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]} (FreeCAD takes a few minutes the first time)"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# npm_ci installs a folder's npm packages from its lockfile, unless the
# installed tree is already newer than the lockfile.
npm_ci() {
  local dir=$1 stamp="$1/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
    echo "install-deps: npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
}

# The web UI, built from its sources.
npm_ci gateway/web
$run_only && exit 0
# The MCP end-to-end tests drive Nexus with the official TypeScript MCP client;
# the MCP Inspector (its CLI, --strict) checks both MCP servers' tool schemas.
npm_ci tests/mcp
# The generated-client test builds a TypeScript client from /openapi.json.
npm_ci tests/client
# The host runtimes' 3D exports are held to the Khronos glTF validator.
npm_ci tests/gltf
