"""`python -m k0maru_retriever`: run the retriever service."""

import os

# TagMemo's linear algebra is small (≤ 1k × 384): a multi-threaded BLAS spends more on waking
# its threads than on the work (2.9 vs 8.5 ms CPU per query, bench/tagmemo_bench.py). Set
# before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from k0maru_common import configure_logging, exit_without_teardown

from .config import RetrieverSettings
from .server import run


def main() -> None:
    settings = RetrieverSettings()
    configure_logging("retriever", settings.log_level)
    run(settings)  # returns once everything is closed
    exit_without_teardown()


if __name__ == "__main__":
    main()
