#!/usr/bin/env bash
# Builds the web UI from its lockfile into gateway/web/dist, which the gateway
# embeds. dist/ is committed so `go build` works without npm; run this after
# changing gateway/web and commit the result.
set -euo pipefail
cd "$(dirname "$0")/../gateway/web"
npm ci --no-audit --no-fund
npm run build
