#!/usr/bin/env bash
# Fails when regenerating from proto/ changes the committed generated code.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(git status --porcelain -- gen)
buf generate
after=$(git status --porcelain -- gen)
if [ "$before" != "$after" ] || ! git diff --quiet -- gen; then
  echo "generated code is out of date: run 'make gen' and commit gen/" >&2
  git status --short -- gen >&2
  git diff --stat -- gen >&2
  exit 1
fi
echo "generated code matches proto/"
