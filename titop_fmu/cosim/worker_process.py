"""Entry point of a worker process (``python -m titop_fmu.cosim.worker_process``, started by
:class:`~.workers.RemoteStepper`)."""

from titop_fmu.cosim.workers import serve

if __name__ == "__main__":
    serve()
