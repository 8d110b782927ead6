"""The docs pages' ``titop-fmu`` commands shared by the run's processes (tests/support/guide.py:
a command another worker ran on the same inputs is not run again)."""

import pytest

from guide import RESULTS
from session_cache import shared_folder


@pytest.fixture(scope="session", autouse=True)
def guide_results_shared(tmp_path_factory):
    RESULTS.share(shared_folder(tmp_path_factory, "guide-results"))
