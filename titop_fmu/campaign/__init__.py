"""Campaigns: Monte Carlo runs and parameter sweeps of any system, on Dask.

* :mod:`.distributions` -- the distributions and designs of the varied quantities;
* :mod:`.spec` -- a campaign's settings (:class:`Sweep`) and its file form;
* :mod:`.runner` -- one sample on a worker (the system prepared once per worker);
* :mod:`.store` -- the Parquet store, written as runs finish, read back by :func:`open`;
* :mod:`.execute` -- the runs on a Dask cluster (or one by one), progress, Ctrl-C, resume;
* :mod:`.report` -- envelopes, worst samples, rank correlations, figures.

>>> from titop_fmu import campaign
>>> spec = campaign.Sweep("balloon", vary={"m_P1": "uniform(1.5,2.5)"}, samples=20, seed=1, stop=2.0)
>>> c = campaign.run(spec, "store")          # a local cluster, one worker per core
>>> c.samples, c.trajectory(3)
"""

from .distributions import SweepError
from .execute import Interrupted, run
from .spec import Sweep
from .store import Campaign, open

__all__ = ["Campaign", "Interrupted", "Sweep", "SweepError", "open", "run"]
