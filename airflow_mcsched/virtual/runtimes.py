"""The two ways a virtual container runs: `timed` (waits, then exits with a chosen code) and
`process` (a real local subprocess whose output becomes the container log).

Both report their end through `on_exit(exit_code, reason, message)` on the cluster's timeline
thread, so the kubelet sees starts and exits in one order. No images, no isolation: a process
container runs as the server's user, in a scratch working directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from airflow_mcsched.virtual.pod_logs import ContainerLog
from airflow_mcsched.virtual.timeline import Timeline, TimerHandle

ExitCallback = Callable[[int, str, str], None]
# Interpreter names in a container command that mean "this Python", so demo steps import our venv.
PYTHON_NAMES = {"python", "python3", f"python3.{sys.version_info.minor}"}
SIGTERM_EXIT = 128 + signal.SIGTERM
SIGKILL_EXIT = 128 + signal.SIGKILL


class ContainerRun(Protocol):
    def terminate(self, grace_seconds: float) -> None:
        """Stop gracefully (SIGTERM, then SIGKILL after the grace period)."""

    def kill(self) -> None:
        """Stop at once, reporting nothing more (node lost, forced delete, shutdown)."""


def _exit_reason(code: int) -> str:
    return "Completed" if code == 0 else "Error"


class TimedRun:
    """Runs for `duration` seconds and exits with `exit_code`; writes one log line at each end."""

    def __init__(
        self, timeline: Timeline, duration: float, exit_code: int, log: ContainerLog, on_exit: ExitCallback
    ) -> None:
        self._timeline, self._on_exit, self._log = timeline, on_exit, log
        self._exit_code = exit_code
        self._finished = False
        log.write(f"mcsched virtual container: timed run of {duration:g}s, exit code {exit_code}".encode())
        self._timer: TimerHandle = timeline.call_later(duration, self._finish, exit_code)

    def _finish(self, code: int) -> None:
        if self._finished:
            return
        self._finished = True
        if code == self._exit_code:
            self._log.write(f"mcsched virtual container: finished with exit code {code}".encode())
        self._on_exit(code, _exit_reason(code), "")

    def terminate(self, grace_seconds: float) -> None:
        self._timer.cancel()
        self._timeline.call_soon(self._finish, SIGTERM_EXIT)

    def kill(self) -> None:
        self._timer.cancel()
        self._finished = True


class ProcessRun:
    """A real subprocess: `python` means this interpreter; stdout and stderr go to the log."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        timeline: Timeline,
        log: ContainerLog,
        on_exit: ExitCallback,
    ) -> None:
        self._timeline, self._log, self._on_exit = timeline, log, on_exit
        self._killed = False
        self._kill_timer: TimerHandle | None = None
        if argv and argv[0] in PYTHON_NAMES:
            argv = [sys.executable, *argv[1:]]
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            if not argv:
                raise FileNotFoundError("no command specified")
            cwd.mkdir(parents=True, exist_ok=True)
            self.proc = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: terminate reaches the children too
            )
        except OSError as err:
            message = (
                "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                f'exec: "{argv[0] if argv else ""}": {err.strerror or err}'
            )
            timeline.call_soon(self._report, 128, "StartError", message)
            return
        threading.Thread(target=self._pump, name=f"container-output-{self.proc.pid}", daemon=True).start()

    @property
    def started(self) -> bool:
        return self.proc is not None

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._log.write(line)
        code = self.proc.wait()
        if code < 0:
            code = 128 - code
        self._timeline.call_soon(self._report, code, _exit_reason(code), "")

    def _report(self, code: int, reason: str, message: str) -> None:
        if self._kill_timer:
            self._kill_timer.cancel()
        if not self._killed:
            self._on_exit(code, reason, message)

    def _signal(self, sig: int) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def terminate(self, grace_seconds: float) -> None:
        self._signal(signal.SIGTERM)
        self._kill_timer = self._timeline.call_later(grace_seconds, self._signal, signal.SIGKILL)

    def kill(self) -> None:
        self._killed = True
        self._signal(signal.SIGKILL)
