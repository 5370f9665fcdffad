"""Imported by every Python process of a test's Airflow deployment (its PYTHONPATH, `tests/stack_watch.py`):
on the signal `stack_watch.STACKS`, the process writes every thread's stack to its standard error, its
component log. faulthandler writes from C, so a process whose threads all wait inside a C call (a
SQLite lock, a socket) still answers, where Airflow's own SIGQUIT handler, which runs Python code,
would wait with them."""

import faulthandler
import signal
import sys

faulthandler.register(signal.SIGRTMIN + 3, file=sys.stderr, all_threads=True)
