"""Every component of the deployment answers the stack signal (tests/stack_watch.py) and goes on:
what a test that finds the deployment stalled relies on."""

from __future__ import annotations

import re

from tests.stack_watch import dump_stacks

A_STACK = re.compile(r"(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\)")  # faulthandler's heading


def test_every_component_writes_where_its_threads_wait_and_keeps_running(deployment):
    stack = deployment.stack
    stacks = dump_stacks(stack.processes, stack.component_log)
    for name in stack.processes:
        part = stacks.split(f"--- {name} (pid", 1)[1].split("\n--- ", 1)[0]
        assert A_STACK.search(part), f"{name} wrote no stacks"
    assert all(p.poll() is None for p in stack.processes.values())
    assert stack.health() is not None  # the API server still answers
