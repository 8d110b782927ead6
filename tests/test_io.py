"""Writing results: whole or not at all, whenever Ctrl-C comes."""

import signal
import tempfile
import threading

import pytest

from titop_fmu.io import write_atomically


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals: main thread only")
def test_a_ctrl_c_as_the_temporary_file_is_made_leaves_nothing(tmp_path, monkeypatch, sends_itself_sigint):
    """SIGINT right after the temporary file exists, before its name is known to the caller
    (the window a campaign's Ctrl-C once hit: a '.000000.parquet.*.tmp' left in the store):
    KeyboardInterrupt, no result and no temporary file."""
    made = tempfile.mkstemp

    def mkstemp_then_ctrl_c(*args, **kwargs):
        fd_name = made(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return fd_name
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "result.csv", lambda p: open(p, "w").write("t\n0\n"))
    assert list(tmp_path.iterdir()) == []


def test_a_ctrl_c_while_writing_leaves_nothing(tmp_path):
    def write(p):
        open(p, "w").write("t\n")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "result.csv", write)
    assert list(tmp_path.iterdir()) == []
    write_atomically(tmp_path / "result.csv", lambda p: open(p, "w").write("t\n0\n"))
    assert [p.name for p in tmp_path.iterdir()] == ["result.csv"] and (tmp_path / "result.csv").read_text() == "t\n0\n"
