"""A call to a test deployment that hangs makes each of its processes write where it waits (stack_watch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.stack_watch import StackWatch, stack_env

SLEEPER = """
import time
def waiting_in_a_c_call():
    time.sleep(60)
print("up", flush=True)
waiting_in_a_c_call()
"""


def test_a_call_that_hangs_has_each_process_write_its_stacks_and_go_on(tmp_path):
    log = tmp_path / "sleeper.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", SLEEPER], env={**os.environ, **stack_env()}, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 30
        while "up" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        watch = StackWatch({"sleeper": process}, lambda name: log, after=0.2)

        assert watch.watched(lambda: "quick")() == "quick"
        time.sleep(0.5)
        assert watch.taken == []  # a call that answers in time takes nothing

        watch.watched(time.sleep)(3.0)  # hangs past `after`: the stacks are taken meanwhile
        (taken,) = watch.taken
        assert "had not answered after 0s" in taken and "--- sleeper (pid" in taken
        assert "most recent call first" in taken and "waiting_in_a_c_call" in taken
        assert process.poll() is None  # writing its stacks does not stop the process
    finally:
        process.kill()
        process.wait()
