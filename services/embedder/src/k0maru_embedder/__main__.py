"""`python -m k0maru_embedder`: run one embedder worker."""

from k0maru_common import configure_logging, exit_without_teardown

from .config import EmbedderSettings
from .server import run


def main() -> None:
    settings = EmbedderSettings()
    configure_logging("embedder", settings.log_level)
    run(settings)  # returns once everything is closed
    exit_without_teardown()


if __name__ == "__main__":
    main()
