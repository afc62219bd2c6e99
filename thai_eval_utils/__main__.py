"""``python -m thai_eval_utils``: the ``thai-eval`` command (see :mod:`thai_eval_utils.cli`)."""

import sys

from thai_eval_utils.cli import main

if __name__ == "__main__":
    sys.exit(main())
