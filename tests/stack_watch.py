"""Where each process of a test's Airflow deployment waits, taken while a call to it hangs.

Twice (sessions 22 and 31) every component of the SQLite deployment stalled at once for the 60 s
of SQLite's lock wait and then went on, failing a test; nothing logged said who held the lock. A
test that meets that again should show where each process was waiting during the stall, not only
its aftermath. So the deployment's processes load `stack_dumps/sitecustomize.py`, and a call to the
REST API that has not answered after `after` seconds makes each write its threads' stacks to its
log; a failing test's report carries what they wrote (tests/e2e/conftest.py).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from functools import wraps
from pathlib import Path
from subprocess import Popen
from typing import Any

STACKS = signal.SIGRTMIN + 3  # as in stack_dumps/sitecustomize.py
SITE_DIR = Path(__file__).parent / "stack_dumps"
MAX_CHARS_PER_PROCESS = 6000  # from the signal on: the stacks first, then whatever the process logged meanwhile


def stack_env() -> dict[str, str]:
    """The environment entry that makes a deployment's Python processes answer `STACKS`."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(SITE_DIR), os.environ.get("PYTHONPATH")]))}


def dump_stacks(processes: Mapping[str, Popen], log_of: Callable[[str], Path], settle: float = 2.0) -> str:
    """Ask each running process (the components themselves, not their children: a process that did
    not load the handler would die of the signal) for its stacks; what each wrote to its log."""
    sizes = {}
    for name, process in processes.items():
        if process.poll() is None:
            sizes[name] = log_of(name).stat().st_size
            os.kill(process.pid, STACKS)
    time.sleep(settle)
    parts = []
    for name, size in sizes.items():
        with open(log_of(name), "rb") as log:
            log.seek(size)
            written = log.read().decode(errors="replace")
        parts.append(f"--- {name} (pid {processes[name].pid}) ---\n{written[:MAX_CHARS_PER_PROCESS]}")
    return "\n".join(parts)


class StackWatch:
    """Wraps calls to a deployment; one that has not returned after `after` seconds dumps the stacks."""

    def __init__(self, processes: Mapping[str, Popen], log_of: Callable[[str], Path], after: float = 20.0) -> None:
        self._processes, self._log_of, self.after = processes, log_of, after
        self.taken: list[str] = []

    def watched(self, call: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(call)
        def watched_call(*args: Any, **kwargs: Any) -> Any:
            what = " ".join(str(a) for a in args[:2])
            timer = threading.Timer(self.after, self._take, (what,))
            timer.daemon = True
            timer.start()
            try:
                return call(*args, **kwargs)
            finally:
                timer.cancel()

        return watched_call

    @classmethod
    def of(cls, stack: Any) -> StackWatch:
        """A watch on an `AirflowStack` that has started: its REST calls (`api`, `token`) are watched."""
        watch = cls(stack.processes, stack.component_log)
        stack.api, stack.token = watch.watched(stack.api), watch.watched(stack.token)
        return watch

    def report(self, report: Any) -> None:
        """Hand what was taken during a test to its report when it failed, then forget it (a
        deployment serves many tests: each reports its own)."""
        if report.failed and self.taken:
            report.sections.append(("stacks taken while the deployment did not answer", "\n".join(self.taken)))
        self.taken.clear()

    def _take(self, what: str) -> None:
        stacks = dump_stacks(self._processes, self._log_of)
        self.taken.append(f"{time.strftime('%H:%M:%S')} {what} had not answered after {self.after:.0f}s:\n{stacks}")
