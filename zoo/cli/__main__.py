"""`python -m zoo.cli`, the same as the `keras-seq` command."""

import sys

from zoo.cli.main import main

sys.exit(main())
