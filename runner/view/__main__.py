"""``python -m runner.view``."""

import sys

from runner.view.page import main

if __name__ == "__main__":
    sys.exit(main())
