"""`python -m k0maru_offload`: run the offload service."""

from k0maru_common import configure_logging, exit_without_teardown

from .config import OffloadSettings
from .server import run


def main() -> None:
    settings = OffloadSettings()
    configure_logging("offload", settings.log_level)
    run(settings)  # returns once everything is closed
    exit_without_teardown()


if __name__ == "__main__":
    main()
