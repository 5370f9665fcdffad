"""The per-process admission runner: one cycle at a time, shared by everyone who asked meanwhile."""

from __future__ import annotations

import threading
import time

from airflow_mcsched.service.admission_runner import AdmissionRunner


class SlowCycle:
    """A cycle that takes `seconds` and remembers how many ran and which callers' changes it saw."""

    def __init__(self, seconds: float = 0.0, fail_first: bool = False) -> None:
        self.seconds = seconds
        self.fail_first = fail_first
        self.runs = 0
        self.changes = 0  # changes committed so far, as a caller would commit its row
        self.seen: list[int] = []  # per run: how many changes it saw when it began
        self.lock = threading.Lock()

    def __call__(self) -> None:
        with self.lock:
            self.runs += 1
            self.seen.append(self.changes)
            fail = self.fail_first and self.runs == 1
        time.sleep(self.seconds)
        if fail:
            raise RuntimeError("database went away")


def test_a_lone_caller_runs_the_cycle_itself_at_once():
    cycle = SlowCycle()
    runner = AdmissionRunner(cycle)
    assert runner.decide_after_change() is True
    assert runner.decide_after_change() is True
    assert cycle.runs == 2  # every call after a change gets a cycle that began after it


def test_concurrent_callers_share_cycles_and_each_sees_a_cycle_begun_after_its_change():
    cycle = SlowCycle(seconds=0.05)
    runner = AdmissionRunner(cycle)
    seen_after: list[tuple[int, int]] = []  # (change number, changes the deciding cycle saw)
    guard = threading.Lock()

    def caller() -> None:
        with cycle.lock:
            cycle.changes += 1
            mine = cycle.changes
        before = cycle.runs
        assert runner.decide_after_change(wait_seconds=10)
        with guard:
            seen_after.append((mine, max(cycle.seen[before:], default=-1)))

    threads = [threading.Thread(target=caller) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen_after) == 40
    # each caller's change was visible to a cycle that ended before its answer
    assert all(saw >= mine for mine, saw in seen_after), seen_after
    # and 40 callers did not pay for 40 cycles: most joined a cycle someone else ran
    assert cycle.runs < 40 / 2, cycle.runs


def test_a_failed_cycle_answers_false_and_the_next_caller_runs_a_new_one():
    cycle = SlowCycle(fail_first=True)
    runner = AdmissionRunner(cycle)
    assert runner.decide_after_change() is False
    assert runner.decide_after_change() is True
    assert cycle.runs == 2


def test_a_caller_stops_waiting_after_its_wait_while_a_cycle_hangs():
    release = threading.Event()
    runner = AdmissionRunner(lambda: release.wait(10))
    leader = threading.Thread(target=runner.decide_after_change)
    leader.start()
    time.sleep(0.05)  # the leader is inside the cycle now
    t0 = time.monotonic()
    assert runner.decide_after_change(wait_seconds=0.2) is False
    assert time.monotonic() - t0 < 5
    release.set()
    leader.join()
    assert runner.decide_after_change(wait_seconds=5) is True
