#!/usr/bin/env bash
# Re-resolve the workspace and write the committed locks:
#   requirements.lock      runtime packages of every service, pinned with hashes
#   requirements-dev.lock  lint/type/test tools, pinned with hashes
# The locks are exported from uv's own uv.lock, which stays local (it records download
# addresses; the exported form carries versions and hashes only).
set -euo pipefail
cd "$(dirname "$0")/.."
uv lock
uv export --frozen --no-dev --no-emit-workspace --no-header --quiet -o requirements.lock
uv export --frozen --only-group dev --no-emit-workspace --no-header --quiet -o requirements-dev.lock
