"""`python -m k0maru_scanner`: run the scanner service."""

from k0maru_common import configure_logging, exit_without_teardown

from .config import ScannerSettings
from .server import run


def main() -> None:
    settings = ScannerSettings()
    configure_logging("scanner", settings.log_level)
    run(settings)  # returns once everything is closed
    exit_without_teardown()


if __name__ == "__main__":
    main()
