"""`python -m autotriton_jupyter` is the `autotriton` command."""

from .cli import run

run()
