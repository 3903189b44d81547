#!/usr/bin/env bash
# make release: the release artifacts of the committed sources (HEAD) in dist/:
# the nexus binary for each target (Linux, macOS, Windows; amd64 and arm64),
# the Revit add-in zip, the FreeCAD add-on zip, the Helm chart's package, an
# SPDX SBOM, SHA256SUMS, all stamped with VERSION (default: the chart's
# appVersion). RELEASE_TARGETS narrows the targets (the fast check builds
# one); DIST moves the output.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' deploy/nexus/Chart.yaml)}
targets=${RELEASE_TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
dist=${DIST:-$root/dist}
commit=$(git rev-parse --short=12 HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "release: building HEAD ($commit); uncommitted changes are not in it" >&2
fi

src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
# The committed tree, with the version stamped as the Dockerfile stamps it.
git archive HEAD | tar -x -C "$src"
printf '%s\n' "$version" > "$src/platform/version/version.txt"
rm -rf "$dist"
mkdir -p "$dist"

for t in $targets; do
  os=${t%/*} arch=${t#*/}
  ext=""; [ "$os" = windows ] && ext=.exe
  name="nexus_${version}_${os}_${arch}"
  echo "release: $name"
  (cd "$src" && GOWORK=off CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X nexus.local/platform/version.commit=$commit" -o "$dist/$name/nexus$ext" ./cmd/nexus)
  cp "$src/LICENSE" "$dist/$name/"
  if [ "$os" = windows ]; then
    (cd "$dist" && zip -qr "$name.zip" "$name")
  else
    tar -C "$dist" -czf "$dist/$name.tar.gz" "$name"
  fi
done

# The add-ons, built by the binary of this machine's target from the same tree.
host="$src/nexus-host"
(cd "$src" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-X nexus.local/platform/version.commit=$commit" -o "$host" ./cmd/nexus)
(cd "$src" && GOWORK=off go run ./hosts/revit/cmd/revitaddin -o "$dist" >/dev/null)
mods=$(mktemp -d)
"$host" host freecad --install-addon --mod-dir "$mods" >/dev/null
cp "$src/LICENSE" "$mods/Nexus/"
(cd "$mods" && zip -qr "$dist/Nexus-freecad-addon-$version.zip" Nexus)
rm -rf "$mods"

(cd deploy && go run ./cmd/release chart "$src/deploy/nexus" "$dist") >/dev/null
(cd deploy && go run ./cmd/release sbom "$dist/nexus_${version}.spdx.json" "$version" "$host" "$src/gateway/web/package-lock.json")
for t in $targets; do rm -rf "$dist/nexus_${version}_${t%/*}_${t#*/}"; done
(cd deploy && go run ./cmd/release sums "$dist")
echo "release: $dist"
(cd "$dist" && ls -l)
