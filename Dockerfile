# One image per k0maru service, from this one file. Build from the repository root:
#   docker build --build-arg SERVICE=scanner -t k0maru-scanner .
# SERVICE is one of scanner, embedder, retriever, offload, gateway. Each image installs only its
# service's dependency set (requirements/<service>.lock, exported by scripts/lock.sh), so the
# gateway and scanner images carry no onnxruntime, model files, jieba or tantivy.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG SERVICE
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
ENV UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never
WORKDIR /app
COPY requirements/ ./requirements/
RUN test -f "requirements/${SERVICE}.lock" || { echo "build with --build-arg SERVICE=<service>" >&2; exit 1; } \
 && uv venv /app/.venv \
 && uv pip sync --python /app/.venv/bin/python --require-hashes "requirements/${SERVICE}.lock"
COPY libs/common ./libs/common
COPY services/${SERVICE} ./services/${SERVICE}
RUN uv pip install --python /app/.venv/bin/python --no-deps ./libs/common "./services/${SERVICE}"

FROM ${PYTHON_IMAGE}
ARG SERVICE
RUN useradd --create-home --uid 10001 k0maru
# The scanner and the offload service read the vault's git history (read-only: rev-parse,
# ls-tree, log) to date each note by its last commit; /vault is the mount docker-compose.yml gives
# them, owned by the host's user, so git's ownership check is told that this one folder is trusted.
RUN if [ "$SERVICE" = scanner ] || [ "$SERVICE" = offload ]; then \
      apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/* \
      && git config --system --add safe.directory /vault; \
    fi
COPY --from=build /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH PYTHONUNBUFFERED=1 SERVICE_MODULE=k0maru_${SERVICE}
USER k0maru
WORKDIR /home/k0maru
ENTRYPOINT ["sh", "-c", "exec python -m \"$SERVICE_MODULE\" \"$@\"", "--"]
