"""Label and field selectors on pod lists, as KPO and the capacity sync use them."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException
from pod_specs import pod, wait_phase

from airflow_mcsched.virtual.selectors import parse_label_selector


@pytest.fixture
def labelled(api):
    specs = {
        "p-train": {"app": "train", "team": "ml", "kubernetes_pod_operator": "True"},
        "p-eval": {"app": "eval", "team": "ml", "already_checked": "True"},
        "p-etl": {"app": "etl", "team": "data", "airflow-worker": "1"},
    }
    for name, labels in specs.items():
        api.create_namespaced_pod("default", pod(name, labels=labels, duration=60))
    return api


SELECTIONS = [
    ("team=ml", ["p-eval", "p-train"]),
    ("team==ml", ["p-eval", "p-train"]),
    ("team!=ml", ["p-etl"]),
    ("!airflow-worker", ["p-eval", "p-train"]),
    ("airflow-worker", ["p-etl"]),
    ("app in (train,etl)", ["p-etl", "p-train"]),
    ("app notin (train, etl)", ["p-eval"]),
    ("team=ml,already_checked!=True", ["p-train"]),
    ("kubernetes_pod_operator=True,already_checked!=True,!airflow-worker", ["p-train"]),
    ("", ["p-etl", "p-eval", "p-train"]),
]


@pytest.mark.parametrize(("selector", "names"), SELECTIONS, ids=[s or "(empty)" for s, _ in SELECTIONS])
def test_label_selector(labelled, selector, names):
    found = labelled.list_namespaced_pod("default", label_selector=selector).items
    assert sorted(p.metadata.name for p in found) == sorted(names)


def test_field_selector_on_phase_and_node(labelled):
    wait_phase(labelled, "p-train", "Running")
    running = labelled.list_namespaced_pod("default", field_selector="status.phase=Running").items
    assert "p-train" in {p.metadata.name for p in running}
    node = labelled.read_namespaced_pod("p-train", "default").spec.node_name
    on_node = labelled.list_namespaced_pod("default", field_selector=f"spec.nodeName={node}").items
    assert "p-train" in {p.metadata.name for p in on_node}
    assert not labelled.list_namespaced_pod(
        "default", field_selector="status.phase!=Running,status.phase!=Pending"
    ).items


def test_field_selector_on_name(labelled):
    found = labelled.list_namespaced_pod("default", field_selector="metadata.name=p-eval").items
    assert [p.metadata.name for p in found] == ["p-eval"]


def test_list_across_all_namespaces(labelled):
    labelled.create_namespace({"metadata": {"name": "team-b"}})
    labelled.create_namespaced_pod("team-b", pod("p-other", duration=60))
    found = {(p.metadata.namespace, p.metadata.name) for p in labelled.list_pod_for_all_namespaces().items}
    assert ("team-b", "p-other") in found and ("default", "p-train") in found


def test_limit_and_continue_page_through_a_list(labelled):
    first = labelled.list_namespaced_pod("default", limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    rest = labelled.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert len(rest.items) == 1


@pytest.mark.parametrize("selector", ["app in (a", "a b", "=x", "key=v=w,"])
def test_bad_label_selector_is_400(api, selector):
    with pytest.raises(ApiException) as err:
        api.list_namespaced_pod("default", label_selector=selector)
    assert err.value.status == 400


def test_unsupported_field_selector_is_400(api):
    with pytest.raises(ApiException) as err:
        api.list_namespaced_pod("default", field_selector="spec.priority=0")
    assert err.value.status == 400
    assert "field label not supported" in err.value.body


def test_parsed_selector_keeps_its_requirements():
    selector = parse_label_selector("a=1,!b,c in (x,y),d notin (z),e,f!=2")
    assert [(r.key, r.op) for r in selector.requirements] == [
        ("a", "="), ("b", "!"), ("c", "in"), ("d", "notin"), ("e", "exists"), ("f", "!="),
    ]  # fmt: skip
