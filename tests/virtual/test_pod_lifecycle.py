"""A pod's life on a virtual cluster: bound, Running, Succeeded or Failed, deleted."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException
from pod_specs import condition, events_of, log_text, pod, wait_phase

from airflow_mcsched.virtual.fleet import wait_for


def test_pod_is_scheduled_runs_and_succeeds(api):
    created = api.create_namespaced_pod("default", pod("train", gpus=1, duration=0.3))
    assert created.status.phase == "Pending"
    running = wait_phase(api, "train", "Running")
    assert running.spec.node_name.startswith("onprem-a100-a100-ib-")
    assert condition(running, "PodScheduled").status == "True"
    assert condition(running, "Ready").status == "True"
    assert running.status.container_statuses[0].state.running.started_at is not None
    assert running.status.pod_ip and running.status.host_ip
    done = wait_phase(api, "train", "Succeeded")
    terminated = done.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 0 and terminated.reason == "Completed"
    assert terminated.finished_at >= terminated.started_at


def test_container_waits_in_container_creating_before_it_runs(a100, fleet_spec):
    from airflow_mcsched.virtual.fleet import VirtualFleet
    from airflow_mcsched.virtual.options import VirtualClusterOptions

    slow_start = VirtualClusterOptions(container_start_seconds=0.5)
    with VirtualFleet.start(fleet_spec, options=slow_start, only=["cloud-h100"]) as fleet:
        api = fleet.cluster("cloud-h100").core_v1()
        api.create_namespaced_pod("default", pod("slow", duration=0.1))

        def creating():
            p = api.read_namespaced_pod("slow", "default")
            statuses = p.status.container_statuses or []
            return statuses and statuses[0].state.waiting and statuses[0].state.waiting.reason == "ContainerCreating"

        wait_for(creating, 5, what="ContainerCreating")


def test_exit_code_annotation_fails_the_pod(api):
    api.create_namespaced_pod("default", pod("crash", duration=0.1, exit_code=3))
    failed = wait_phase(api, "crash", "Failed")
    terminated = failed.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (3, "Error")


def test_lifecycle_events_are_recorded(api):
    api.create_namespaced_pod("default", pod("evented", duration=0.1))
    wait_phase(api, "evented", "Succeeded")
    reasons = [e.reason for e in events_of(api, "evented")]
    assert {"Scheduled", "Pulled", "Created", "Started"} <= set(reasons)
    started = next(e for e in events_of(api, "evented") if e.reason == "Started")
    assert started.involved_object.field_path == "spec.containers{base}"
    assert started.source.component == "kubelet"


def test_generate_name_completes_the_name(api):
    body = pod("ignored")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "job-"
    created = api.create_namespaced_pod("default", body)
    assert created.metadata.name.startswith("job-") and len(created.metadata.name) == 9


def test_duplicate_name_is_409_already_exists(api):
    api.create_namespaced_pod("default", pod("twin"))
    with pytest.raises(ApiException) as err:
        api.create_namespaced_pod("default", pod("twin"))
    body = json.loads(err.value.body)
    assert err.value.status == 409
    assert (body["kind"], body["reason"], body["details"]["name"]) == ("Status", "AlreadyExists", "twin")


def test_missing_pod_is_404_not_found(api):
    with pytest.raises(ApiException) as err:
        api.read_namespaced_pod("ghost", "default")
    body = json.loads(err.value.body)
    assert (err.value.status, body["reason"], body["message"]) == (404, "NotFound", 'pods "ghost" not found')


def test_pod_in_missing_namespace_is_404(api):
    with pytest.raises(ApiException) as err:
        api.create_namespaced_pod("nowhere", pod("p"))
    assert err.value.status == 404


def test_delete_of_a_running_pod_is_graceful_then_gone(api, a100):
    api.create_namespaced_pod("default", pod("long", gpus=8, duration=60))
    wait_phase(api, "long", "Running")
    deleted = api.delete_namespaced_pod("long", "default", grace_period_seconds=5)
    assert deleted.metadata.deletion_timestamp is not None
    wait_for(lambda: not api.list_namespaced_pod("default", field_selector="metadata.name=long").items, 5)
    assert a100.summary()["gpus_free"] == 16


def test_delete_frees_capacity_for_the_next_pod(api, a100):
    api.create_namespaced_pod("default", pod("hog-1", gpus=8, duration=60))
    api.create_namespaced_pod("default", pod("hog-2", gpus=8, duration=60))
    wait_phase(api, "hog-2", "Running")
    assert a100.summary()["gpus_free"] == 0
    api.delete_namespaced_pod("hog-1", "default", grace_period_seconds=0)
    assert a100.summary()["gpus_free"] == 8
    api.create_namespaced_pod("default", pod("next", gpus=8, duration=0.1))
    assert wait_phase(api, "next", "Succeeded").spec.node_name


def test_status_subresource_matches_the_pod(api):
    api.create_namespaced_pod("default", pod("s", duration=0.1))
    assert api.read_namespaced_pod_status("s", "default").metadata.name == "s"


def test_init_container_runs_before_the_main_container(api):
    body = pod("with-init", duration=0.1)
    body["spec"]["initContainers"] = [
        {"name": "prepare", "image": "busybox", "command": ["python", "-c", "print('ready')"]}
    ]
    api.create_namespaced_pod("default", body)
    done = wait_phase(api, "with-init", "Succeeded")
    assert done.status.init_container_statuses[0].state.terminated.exit_code == 0
    assert condition(done, "Initialized").status == "True"
    assert log_text(api, "with-init", container="prepare") == "ready\n"
