"""``python -m titop_fmu.cli``: the ``titop-fmu`` command."""

import sys

from . import main

sys.exit(main(own_process=True))
