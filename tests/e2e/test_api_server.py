"""The placement service inside a real `airflow api-server` process."""

# Runs before the DAG-run tests (file order), while every GPU of the fleet is still free.
from __future__ import annotations

import sqlite3
import threading
import time
import urllib.error
import urllib.request


def test_the_api_server_syncs_every_clusters_capacity(deployment):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        clusters = deployment.stack.api("GET", "/mcsched/api/v1/clusters")["clusters"]
        if all(c["status"] and c["status"]["healthy"] for c in clusters):
            break
        time.sleep(1)
    free = {c["profile"]["name"]: c["status"]["free_gpus"] for c in clusters}
    assert free == {"onprem-a100": 16, "cloud-h100": 16, "baremetal-t4": 12}


def test_anonymous_calls_are_refused(deployment):
    for path in ("/mcsched/api/v1/clusters", "/mcsched/api/v1/placements"):
        try:
            urllib.request.urlopen(deployment.stack.url + path, timeout=10)
        except urllib.error.HTTPError as err:
            assert err.code == 401
        else:
            raise AssertionError(f"{path} answered without credentials")


def test_an_api_write_waits_out_another_process_holding_sqlites_write_lock(deployment):
    """SQLite has one writer. A write held longer than Python's default wait of 5 s (a busy
    scheduler's commit on a loaded machine) must delay Airflow's API, not fail it with a 500."""
    stack = deployment.stack
    stack.wait_for_dag("e2e_hold_h100")
    token = stack.token()
    holder = sqlite3.connect(stack.sqlite_file, timeout=60, isolation_level=None, check_same_thread=False)
    assert holder.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    holder.execute("BEGIN IMMEDIATE")  # this process now holds the one write lock...
    release = threading.Timer(7.0, holder.execute, ("COMMIT",))  # ...for 7 s
    release.start()
    started = time.monotonic()
    try:
        dag = stack.api("PATCH", "/api/v2/dags/e2e_hold_h100", {"is_paused": True}, token=token)
        waited = time.monotonic() - started
    finally:
        release.join()
        holder.close()
    assert dag["is_paused"] is True
    assert waited > 6.0  # it really waited for the lock, past the old 5 s limit
