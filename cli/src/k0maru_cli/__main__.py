"""`python -m k0maru_cli`: the same as the `k0maru` command."""

from .cli import main

if __name__ == "__main__":
    main()
