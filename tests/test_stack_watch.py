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


def test_a_failed_tests_report_carries_what_was_taken_and_the_next_test_starts_afresh(tmp_path):
    import pytest

    watch = StackWatch({}, lambda name: tmp_path / name)
    watch.taken.append("12:00:00 GET /api/v2/dags had not answered after 20s:\n--- api-server (pid 1) ---\n...")
    passed = pytest.TestReport("t.py::a", ("t.py", 1, "a"), {}, "passed", None, "call")
    watch.report(passed)
    assert passed.sections == [] and watch.taken == []  # a stall the test lived through is not its to report

    watch.taken.append("12:01:00 PATCH /api/v2/dags/x had not answered after 20s:\n--- scheduler (pid 2) ---\n...")
    failed = pytest.TestReport("t.py::b", ("t.py", 2, "b"), {}, "failed", None, "call")
    watch.report(failed)
    [(title, text)] = failed.sections
    assert title == "stacks taken while the deployment did not answer" and "PATCH /api/v2/dags/x" in text
    assert watch.taken == []
