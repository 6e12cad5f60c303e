"""``python -m runner.view``."""

import sys

from runner.view.page import main

sys.exit(main())
