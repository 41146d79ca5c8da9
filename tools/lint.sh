#!/usr/bin/env bash
# Runs golangci-lint (.golangci.yml), built from the version the tools
# module pins into a cache outside git: a warm run only checks that it exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-jupyter/tools"
key="$(cat "$root/tools/go.mod" "$root/tools/go.sum" | sha256sum | cut -c1-12)"
bin="$cache/golangci-lint-$key"
if [[ ! -x "$bin" ]]; then
  echo "lint: building golangci-lint (a cold build takes a minute or two)" >&2
  mkdir -p "$cache"
  (cd "$root/tools" && go build -o "$bin.tmp" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
  mv "$bin.tmp" "$bin"
fi
cd "$root"
"$bin" run ./...
