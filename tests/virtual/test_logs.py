"""Container logs: whole, tailed, since, with timestamps, and followed while a process writes."""

from __future__ import annotations

import re
import sys
import time

import pytest
from kubernetes.client.rest import ApiException
from pod_specs import log_text, pod, wait_phase

TICKER = ["python", "-c", "import time\nfor i in range(4):\n    print(f'line {i}', flush=True)\n    time.sleep(0.3)"]


def test_process_runtime_output_is_the_log(api):
    api.create_namespaced_pod("default", pod("hello", command=["python", "-c", "print('hello from a pod')"]))
    wait_phase(api, "hello", "Succeeded")
    assert log_text(api, "hello") == "hello from a pod\n"


def test_stderr_goes_to_the_log_and_exit_code_to_the_status(api):
    script = "import sys\nprint('oops', file=sys.stderr)\nsys.exit(7)"
    api.create_namespaced_pod("default", pod("fails", command=["python3", "-c", script]))
    failed = wait_phase(api, "fails", "Failed")
    assert failed.status.container_statuses[0].state.terminated.exit_code == 7
    assert log_text(api, "fails") == "oops\n"


def test_python_means_this_interpreter_and_env_comes_from_the_spec(api):
    body = pod("env", command=["python", "-c", "import os, sys\nprint(sys.executable)\nprint(os.environ['STEP'])"])
    body["spec"]["containers"][0]["env"] = [{"name": "STEP", "value": "fine-tune"}]
    api.create_namespaced_pod("default", body)
    wait_phase(api, "env", "Succeeded")
    assert log_text(api, "env").splitlines() == [sys.executable, "fine-tune"]


def test_follow_streams_lines_while_the_container_runs(api):
    api.create_namespaced_pod("default", pod("ticker", command=TICKER))
    wait_phase(api, "ticker", "Running")
    response = api.read_namespaced_pod_log("ticker", "default", follow=True, _preload_content=False)
    arrivals = []
    for chunk in response.stream(amt=None, decode_content=True):
        arrivals.extend((time.monotonic(), line) for line in chunk.decode().splitlines())
    assert [line for _, line in arrivals] == ["line 0", "line 1", "line 2", "line 3"]
    assert arrivals[-1][0] - arrivals[0][0] > 0.6  # lines came as written, not all at the end


def test_two_followers_and_a_watch_at_once(api):
    import threading

    api.create_namespaced_pod("default", pod("shared", command=TICKER))
    wait_phase(api, "shared", "Running")
    results: list[str] = []

    def follow():
        results.append(
            api.read_namespaced_pod_log("shared", "default", follow=True, _preload_content=False).data.decode()
        )

    threads = [threading.Thread(target=follow) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == ["line 0\nline 1\nline 2\nline 3\n"] * 2


def test_timestamps_are_rfc3339_with_nanoseconds(api):
    api.create_namespaced_pod("default", pod("stamped", command=["python", "-c", "print('x')"]))
    wait_phase(api, "stamped", "Succeeded")
    line = log_text(api, "stamped", timestamps=True)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z x\n", line)


def test_tail_lines_and_since_seconds(api):
    api.create_namespaced_pod("default", pod("many", command=["python", "-c", "for i in range(5): print(i)"]))
    wait_phase(api, "many", "Succeeded")
    assert log_text(api, "many", tail_lines=2) == "3\n4\n"
    assert log_text(api, "many", since_seconds=60) == "0\n1\n2\n3\n4\n"
    time.sleep(1.1)
    assert log_text(api, "many", since_seconds=1) == ""


def test_timed_runtime_writes_a_line_at_start_and_end(api):
    api.create_namespaced_pod("default", pod("timed", duration=0.1, exit_code=2))
    wait_phase(api, "timed", "Failed")
    assert "timed run of 0.1s, exit code 2" in log_text(api, "timed")


def test_missing_command_is_a_start_error(api):
    api.create_namespaced_pod("default", pod("nocmd", command=["no-such-binary-xyz"]))
    failed = wait_phase(api, "nocmd", "Failed")
    terminated = failed.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (128, "StartError")
    assert "no-such-binary-xyz" in terminated.message


def test_wrong_container_name_is_400(api):
    api.create_namespaced_pod("default", pod("one", duration=1))
    wait_phase(api, "one", "Running")
    with pytest.raises(ApiException) as err:
        api.read_namespaced_pod_log("one", "default", container="sidecar")
    assert err.value.status == 400


def test_log_of_an_unscheduled_pod_is_empty(api):
    api.create_namespaced_pod("default", pod("nowhere", gpus=99))
    assert log_text(api, "nowhere") == ""


def test_variable_references_in_args_are_expanded(api):
    body = pod("expand", command=["python", "-c", "import sys; print(sys.argv[1])", "$(MODEL)"])
    body["spec"]["containers"][0]["env"] = [{"name": "MODEL", "value": "llama"}]
    api.create_namespaced_pod("default", body)
    wait_phase(api, "expand", "Succeeded")
    assert log_text(api, "expand") == "llama\n"
