"""`python -m autotriton_jupyter` is the `autotriton` command."""

from .cli import main

raise SystemExit(main())
