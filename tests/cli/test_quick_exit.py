"""`synix run` ends its process without Python's final garbage collections (cli/common.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_quick_exit_freezes_the_heap_once_the_handlers_registered_after_it_have_run():
    script = textwrap.dedent("""
        import atexit, gc
        from synix_assets.cli.common import quick_exit

        # registered first, so it runs last: it sees what quick_exit's handler left
        atexit.register(lambda: print("at the end", gc.isenabled(), gc.get_freeze_count() > 0))
        quick_exit()
        quick_exit()  # once per process, however many commands ran
        atexit.register(lambda: print("before", gc.isenabled()))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["before True", "at the end False True"]
