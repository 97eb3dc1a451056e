#!/usr/bin/env bash
# Re-resolve the workspace and write the committed locks:
#   requirements.lock      runtime packages of every service, pinned with hashes
#   requirements-dev.lock  lint/type/test tools, pinned with hashes
#   requirements/<service>.lock  one service's own dependency set (what its Docker image installs)
# The locks are exported from uv's own uv.lock, which stays local (it records download
# addresses; the exported form carries versions and hashes only).
set -euo pipefail
cd "$(dirname "$0")/.."
uv lock
uv export --frozen --no-dev --no-emit-workspace --no-header --quiet -o requirements.lock
uv export --frozen --only-group dev --no-emit-workspace --no-header --quiet -o requirements-dev.lock
for service in scanner embedder retriever offload gateway; do
  uv export --frozen --no-dev --package "k0maru-$service" --no-emit-workspace --no-header --quiet \
    -o "requirements/$service.lock"
done
