"""`python -m k0maru_retriever`: run the retriever service."""

import os
import sys

# TagMemo's linear algebra is small (≤ 1k × 384): a multi-threaded BLAS spends more on waking
# its threads than on the work (2.9 vs 8.5 ms CPU per query, bench/tagmemo_bench.py). Set
# before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from k0maru_common import configure_logging, exit_without_teardown

from .config import RetrieverSettings
from .server import run

# Searches share the process with busy threads (the follower applying changes, the results loop
# storing vectors, the embedding sweep). A search gives up the GIL in each call into tantivy and
# gRPC, and waited for it to come back up to the switch interval (5 ms) every time: the first
# search after a 46,384-chunk build took 0.3-0.4 s, 53 ms with 0.5 ms; at rest no slower
# (bench/README.md, thirtieth wave).
GIL_SWITCH_S = 0.0005


def main() -> None:
    sys.setswitchinterval(GIL_SWITCH_S)
    settings = RetrieverSettings()
    configure_logging("retriever", settings.log_level)
    run(settings)  # returns once everything is closed
    exit_without_teardown()


if __name__ == "__main__":
    main()
