#!/usr/bin/env bash
# Fails when regenerating from proto/ changes the committed generated code.
set -euo pipefail
cd "$(dirname "$0")/.."
web=gateway/web
if [ ! -d "$web/node_modules" ]; then
  echo "gateway/web/node_modules is missing: run make deps first" >&2
  exit 1
fi
# The gateway's OpenAPI 3 document is built from gen/openapi by Go, and the
# web UI's API types (gen/openapi/nexus.d.ts) from that document.
generated=(gen gateway/openapi/openapi.json)
before=$(git status --porcelain -- "${generated[@]}")
buf generate
go generate ./gateway/openapi/
(cd "$web" && npm run --silent types >/dev/null 2>&1)
after=$(git status --porcelain -- "${generated[@]}")
if [ "$before" != "$after" ] || ! git diff --quiet -- "${generated[@]}"; then
  echo "generated code is out of date: run 'make gen' and commit gen/ and gateway/openapi/openapi.json" >&2
  git status --short -- "${generated[@]}" >&2
  git diff --stat -- "${generated[@]}" >&2
  exit 1
fi
echo "generated code matches proto/"

# The web UI's build output is committed so go build needs no npm; it must be
# what the sources build to.
before=$(git status --porcelain -- "$web/dist")
(cd "$web" && npm run --silent build >/dev/null)
after=$(git status --porcelain -- "$web/dist")
if [ "$before" != "$after" ] || ! git diff --quiet -- "$web/dist"; then
  echo "gateway/web/dist is out of date: run scripts/build-web.sh and commit gateway/web/dist" >&2
  git status --short -- "$web/dist" >&2
  exit 1
fi
echo "web UI build matches gateway/web/src"
