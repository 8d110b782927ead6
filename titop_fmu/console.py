"""The ``titop-fmu`` command (:func:`main`): :func:`titop_fmu.cli.main`, with a Ctrl-C that comes
while the command line's modules are imported (numpy, scipy, FMPy: about half a second) ending
as one during a command does, with one line and exit status 130, not a traceback."""

import sys


def main():
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        print("titop-fmu: interrupted; nothing written", file=sys.stderr)
        return 130
    return run(own_process=True)
