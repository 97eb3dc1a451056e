"""`python -m k0maru_retriever`: run the retriever service."""

from k0maru_common import configure_logging

from .config import RetrieverSettings
from .server import run


def main() -> None:
    settings = RetrieverSettings()
    configure_logging("retriever", settings.log_level)
    run(settings)


if __name__ == "__main__":
    main()
