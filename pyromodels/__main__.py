"""``python -m pyromodels``: the same command as the ``pyromodels`` console script."""

from .cli import main

raise SystemExit(main())
