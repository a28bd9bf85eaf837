"""`python -m spotlab` is the `spotlab` command."""

import sys

from .cli.main import main

sys.exit(main())
