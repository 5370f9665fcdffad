"""What a real apiserver refuses, refused alike: 422 Invalid with causes, 400, 401."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from pod_specs import pod


def _refused(api, body) -> tuple[int, dict]:
    with pytest.raises(ApiException) as err:
        api.create_namespaced_pod("default", body)
    return err.value.status, json.loads(err.value.body)


def _with(body: dict, path: list, value) -> dict:
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


LIMITS = ["spec", "containers", 0, "resources", "limits"]
CONTAINER = "spec.containers[0]"
NOTES = "metadata.annotations"
PREFERRED = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
# (case, where in the body, bad value, field named in the cause, words of the message)
INVALID = [
    ("upper-case name", ["metadata", "name"], "Train_Step", "metadata.name", "a lowercase RFC 1123 subdomain"),
    ("name too long", ["metadata", "name"], "a" * 254, "metadata.name", "must be no more than 253 characters"),
    ("label key with two slashes", ["metadata", "labels"], {"a/b/c": "x"}, "metadata.labels", "a qualified name"),
    ("label key prefix", ["metadata", "labels"], {"Bad_Prefix/x": "y"}, "metadata.labels", "prefix part a lowercase"),
    ("label value", ["metadata", "labels"], {"team": "-ml-"}, "metadata.labels", "a valid label must be an empty"),
    ("label value length", ["metadata", "labels"], {"team": "x" * 64}, "metadata.labels", "must be no more than 63"),
    ("negative cpu", [*LIMITS, "cpu"], "-1", f"{CONTAINER}.resources.limits[cpu]", "greater than or equal to 0"),
    ("fractional gpu", [*LIMITS, "nvidia.com/gpu"], "0.5", f"{CONTAINER}.resources.limits[nvidia.com/gpu]", "integer"),
    ("missing image", ["spec", "containers", 0, "image"], "", f"{CONTAINER}.image", "Required value"),
    ("bad container name", ["spec", "containers", 0, "name"], "Base", f"{CONTAINER}.name", "RFC 1123 label"),
    ("restart policy", ["spec", "restartPolicy"], "Sometimes", "spec.restartPolicy", 'Unsupported value: "Sometimes"'),
    ("runtime annotation", ["metadata", "annotations"], {"mcsched.io/runtime": "docker"},
     f"{NOTES}[mcsched.io/runtime]", "Unsupported value"),
    ("gpu-milli annotation", ["metadata", "annotations"], {"mcsched.io/gpu-milli": "1500"},
     f"{NOTES}[mcsched.io/gpu-milli]", "from 1 to 1000"),
    ("preference weight", ["spec", "affinity"], {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}},
     f"{PREFERRED}[0].weight", "must be in the range 1-100"),
    ("two names in a field selector", ["spec", "affinity"], {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}}]}},
     f"{PREFERRED}[0].preference.matchFields[0].values", "must be only one value"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "path", "value", "field", "says"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_pod_is_422_with_a_cause_per_field(api, case, path, value, field, says):
    status, body = _refused(api, _with(pod("ok"), path, value))
    assert status == 422
    assert (body["kind"], body["status"], body["reason"], body["code"]) == ("Status", "Failure", "Invalid", 422)
    assert body["details"]["kind"] == "Pod"
    cause = next(c for c in body["details"]["causes"] if c["field"] == field)
    assert says in cause["message"]
    assert body["message"].startswith('Pod "')


def test_every_invalid_field_is_reported(api):
    body = pod("Bad_Name", labels={"ok": "-bad-"})
    status, answer = _refused(api, body)
    assert status == 422
    assert {c["field"] for c in answer["details"]["causes"]} == {"metadata.name", "metadata.labels"}
    assert answer["message"].startswith('Pod "Bad_Name" is invalid: [')


def test_gpu_request_must_equal_its_limit(api):
    body = pod("ok", gpus=2)
    body["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": "1"}
    status, answer = _refused(api, body)
    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "spec.containers[0].resources.requests"


@pytest.mark.parametrize("quantity", ["1.5.5", "abc", "1Gb", "2 Gi"])
def test_unparsable_quantity_is_400_bad_request_like_a_real_apiserver(api, quantity):
    status, body = _refused(api, pod("ok", memory=quantity))
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert "quantities must match the regular expression" in body["message"]


@pytest.mark.parametrize("quantity", ["100m", "1Gi", "2", "1e3", "0.5", "1.5Ki", "12E", "+3"])
def test_valid_quantities_are_accepted(api, quantity):
    name = "q-" + str(abs(hash(quantity)))
    created = api.create_namespaced_pod("default", pod(name, memory=quantity, cpu="1m"))
    assert created.metadata.name == name


def test_namespace_in_body_must_match_the_path(api):
    body = pod("elsewhere")
    body["metadata"]["namespace"] = "kube-system"
    status, answer = _refused(api, body)
    assert (status, answer["reason"]) == (400, "BadRequest")


def test_invalid_namespace_name_is_422(api):
    with pytest.raises(ApiException) as err:
        api.create_namespace({"metadata": {"name": "Team_A"}})
    assert err.value.status == 422


def _client(a100, token: str | None):
    configuration = client.Configuration()
    configuration.host = a100.url
    if token is not None:
        configuration.api_key = {"authorization": f"Bearer {token}"}
    return client.CoreV1Api(client.ApiClient(configuration))


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["no token", "wrong token"])
def test_requests_without_the_right_token_are_401(a100, token):
    with pytest.raises(ApiException) as err:
        _client(a100, token).list_node()
    body = json.loads(err.value.body)
    assert err.value.status == 401
    assert (body["kind"], body["reason"], body["message"]) == ("Status", "Unauthorized", "Unauthorized")


def test_dry_run_validates_without_creating(api):
    api.create_namespaced_pod("default", pod("dry"), dry_run="All")
    assert not api.list_namespaced_pod("default").items
