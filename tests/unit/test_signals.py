"""What a process that ends on a stop or a failure prints of the objects collected as it exits."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from rmtsweep.signals import quiet_finalizers

    class Client:                                  # as dask's, collected after its event loop closed
        def __init__(self, message):
            self.message = message
        def __del__(self):
            raise RuntimeError(self.message)

    if sys.argv[1] == "quiet":
        quiet_finalizers()
        quiet_finalizers()                         # twice: still one hook
    Client("IOLoop is closed")
    Client("something else went wrong")
""")


def _stderr(mode: str) -> str:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_a_finalizer_failing_on_a_closed_loop_prints_nothing_and_others_still_do():
    loud = _stderr("loud")
    assert loud.count("Exception ignored") == 2 and "IOLoop is closed" in loud
    quiet = _stderr("quiet")
    assert quiet.count("Exception ignored") == 1 and "IOLoop is closed" not in quiet
    assert "RuntimeError: something else went wrong" in quiet


def test_a_start_up_coroutine_left_unawaited_by_a_stop_prints_nothing():
    """A Ctrl-C while a cluster starts leaves its coroutines unawaited: Python's warning is no line for a user."""
    script = textwrap.dedent("""
        import gc, sys
        from rmtsweep.signals import quiet_finalizers

        async def start():
            pass

        if sys.argv[1] == "quiet":
            quiet_finalizers()
        start()                                    # made, never awaited
        gc.collect()
    """)
    for mode, expected in (("loud", 1), ("quiet", 0)):
        proc = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and proc.stderr.count("was never awaited") == expected, proc.stderr
