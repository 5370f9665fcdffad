"""Watches (sync client and kubernetes_asyncio) and the PATCH flavours."""

from __future__ import annotations

import asyncio
import json

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException
from pod_specs import pod, wait_phase

from airflow_mcsched.virtual.selectors import FieldSelector, LabelSelector
from airflow_mcsched.virtual.store import ObjectStore


def test_watch_pods_sees_the_whole_life(api):
    api.create_namespaced_pod("default", pod("watched", duration=0.2))
    seen = []
    for event in watch.Watch().stream(api.list_namespaced_pod, "default", timeout_seconds=5):
        seen.append((event["type"], event["object"].status.phase))
        if event["object"].status.phase == "Succeeded":
            break
    assert seen[0] == ("ADDED", "Pending")
    assert ("MODIFIED", "Running") in seen
    assert seen[-1] == ("MODIFIED", "Succeeded")


def test_watch_resumes_from_a_resource_version(api):
    listing = api.list_namespaced_pod("default")
    api.create_namespaced_pod("default", pod("later", duration=60))
    events = watch.Watch().stream(
        api.list_namespaced_pod, "default", resource_version=listing.metadata.resource_version, timeout_seconds=2
    )
    first = next(iter(events))
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "later")


def test_watch_with_selector_reports_leaving_as_deleted(api):
    api.create_namespaced_pod("default", pod("tagged", labels={"stage": "a"}, duration=60))
    stream = watch.Watch().stream(api.list_namespaced_pod, "default", label_selector="stage=a", timeout_seconds=3)
    assert next(stream)["type"] == "ADDED"
    api.patch_namespaced_pod("tagged", "default", {"metadata": {"labels": {"stage": "b"}}})
    types = []
    for event in stream:
        types.append(event["type"])
        if event["type"] == "DELETED":
            break
    assert types[-1] == "DELETED"


def test_watch_ends_after_timeout_seconds(api):
    import time

    start = time.monotonic()
    assert list(watch.Watch().stream(api.list_namespaced_pod, "default", timeout_seconds=1)) == []
    assert 0.9 < time.monotonic() - start < 15  # it ends after its timeout, not when the test gives up


def test_too_old_resource_version_is_410():
    store = ObjectStore(history=2)
    for i in range(5):
        store.create("Namespace", "", f"ns-{i}", {"metadata": {"name": f"ns-{i}"}})
    lines = []
    store.watch("Namespace", None, LabelSelector(), FieldSelector(), "1", lines.append)
    error = json.loads(lines[0])
    assert error["type"] == "ERROR" and error["object"]["code"] == 410
    assert lines[-1] is None


def test_events_watch_with_kubernetes_asyncio(a100):
    from kubernetes_asyncio import client as aclient
    from kubernetes_asyncio import config as aconfig
    from kubernetes_asyncio import watch as awatch

    a100.core_v1().create_namespaced_pod("default", pod("async-pod", duration=0.2))

    async def collect():
        configuration = aclient.Configuration()
        await aconfig.load_kube_config_from_dict(a100.kubeconfig_dict(), client_configuration=configuration)
        async with aclient.ApiClient(configuration) as api_client:
            v1 = aclient.CoreV1Api(api_client)
            reasons = []
            async for event in awatch.Watch().stream(
                v1.list_namespaced_event, "default", field_selector="involvedObject.name=async-pod", timeout_seconds=2
            ):
                reasons.append(event["object"].reason)
                if event["object"].reason == "Started":
                    break
            pod_obj = await v1.read_namespaced_pod("async-pod", "default")
            return reasons, pod_obj.metadata.name

    reasons, name = asyncio.run(collect())
    assert name == "async-pod"
    assert {"Scheduled", "Started"} <= set(reasons)


def test_strategic_merge_patch_adds_a_label_as_kpo_does(api):
    api.create_namespaced_pod("default", pod("kpo-pod", labels={"dag_id": "d"}, duration=60))
    patched = api.patch_namespaced_pod("kpo-pod", "default", {"metadata": {"labels": {"already_checked": "True"}}})
    assert patched.metadata.labels == {"dag_id": "d", "already_checked": "True"}


def test_merge_patch_removes_with_null(api):
    api.create_namespaced_pod("default", pod("mp", annotations={"note": "x"}, duration=60))
    api.patch_namespaced_pod(
        "mp", "default", {"metadata": {"annotations": {"note": None, "other": "y"}}},
        _content_type="application/merge-patch+json",
    )  # fmt: skip
    annotations = api.read_namespaced_pod("mp", "default").metadata.annotations
    assert "note" not in annotations and annotations["other"] == "y"


def test_json_patch(api):
    api.create_namespaced_pod("default", pod("jp", labels={"a": "b"}, duration=60))
    api.patch_namespaced_pod("jp", "default", [{"op": "add", "path": "/metadata/labels/x", "value": "1"}])
    assert api.read_namespaced_pod("jp", "default").metadata.labels == {"a": "b", "x": "1"}


def test_patch_of_immutable_spec_is_422(api):
    api.create_namespaced_pod("default", pod("imm", duration=60))
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_pod("imm", "default", {"spec": {"restartPolicy": "Always"}})
    assert err.value.status == 422
    assert json.loads(err.value.body)["details"]["causes"][0]["field"] == "spec"


def test_patch_with_invalid_label_is_422(api):
    api.create_namespaced_pod("default", pod("lbl", duration=60))
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_pod("lbl", "default", {"metadata": {"labels": {"bad key": "v"}}})
    assert err.value.status == 422


def test_delete_collection_by_label(api):
    for i in range(3):
        api.create_namespaced_pod("default", pod(f"batch-{i}", labels={"batch": "1"}, duration=60))
    wait_phase(api, "batch-2", ("Running",))
    api.delete_collection_namespaced_pod("default", label_selector="batch=1", grace_period_seconds=0)
    assert not api.list_namespaced_pod("default", label_selector="batch=1").items
