"""``python -m thai_eval_utils.report``: the same as ``thai-eval report`` (see :mod:`thai_eval_utils.report.command`)."""

import sys

from thai_eval_utils.report.command import main

if __name__ == "__main__":
    sys.exit(main())
