"""`python -m rmkit` runs the CLI."""

import sys

from rmkit.cli import main

sys.exit(main())
