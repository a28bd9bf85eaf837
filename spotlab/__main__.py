"""`python -m spotlab` is the `spotlab` command."""

import sys

from .cli import main

sys.exit(main())
