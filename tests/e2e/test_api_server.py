"""The placement service inside a real `airflow api-server` process."""

# Runs before the DAG-run tests (file order), while every GPU of the fleet is still free.
from __future__ import annotations

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
