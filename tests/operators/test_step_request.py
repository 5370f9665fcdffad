"""How a DAG author's words become a resource request and a pod shaped to its reservation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from kubernetes.client import models as k8s

from airflow_mcsched.operators.multi_cluster_pod import MultiClusterPodOperator
from airflow_mcsched.operators.pod_shape import ANNOTATION_PLACEMENT, gpu_split, pod_shape
from airflow_mcsched.operators.resource_request import merge_resource_fields, validated_ask
from airflow_mcsched.service.schemas import PlacementOut, ResourceAsk, TaskRef

KPO_ARGS = {"image": "python:3.11-slim", "cmds": ["python", "-c"], "arguments": ["print(1)"]}


def placement(nodes: tuple[str, ...] = ("c-gpu-pool-0",), **ask) -> PlacementOut:
    return PlacementOut(
        id="p1",
        state="admitted",
        task=TaskRef(dag_id="d", run_id="r", task_id="t"),
        attempt=1,
        team="ml",
        project=None,
        priority_class=None,
        ask=ResourceAsk(**ask),
        cluster="c",
        pool="gpu-pool",
        reservation_id="rsv-p1",
        nodes=list(nodes),
        queued_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_keyword_fields_win_over_the_bundled_ask_and_durations_become_seconds():
    fields = merge_resource_fields(
        ResourceAsk(kind="training", gpus=4, cpu=8), {"gpus": 8, "expected_duration": timedelta(hours=2)}
    )
    assert fields == {"kind": "training", "gpus": 8, "cpu": 8, "expected_duration_seconds": 7200.0}


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"gpus": "eight"}, "gpus: Input should be a valid integer"),
        ({"gpus": 1, "pods": 2}, "pods=2: a KubernetesPodOperator step runs one pod"),
        ({"gpu": 8}, "gpu: Extra inputs are not permitted"),
    ],
)
def test_a_wrong_request_names_the_field(fields, complaint):
    with pytest.raises(ValueError, match=complaint):
        validated_ask(fields)


def test_the_dag_fails_to_parse_when_a_step_asks_wrongly():
    with pytest.raises(ValueError, match="gpus: Input should be a valid integer"):
        MultiClusterPodOperator(task_id="train", gpus="eight", **KPO_ARGS)


def test_a_templated_request_is_checked_when_it_runs_not_when_parsed():
    op = MultiClusterPodOperator(task_id="train", gpus="{{ params.gpus }}", **KPO_ARGS)
    assert op.resource_ask == {"gpus": "{{ params.gpus }}"} and "resource_ask" in op.template_fields


def test_a_step_may_not_name_its_cluster():
    with pytest.raises(ValueError, match="remove kubernetes_conn_id"):
        MultiClusterPodOperator(task_id="train", gpus=1, kubernetes_conn_id="my_cluster", **KPO_ARGS)


@pytest.mark.parametrize(
    ("ask", "split"),
    [
        ({"gpus": 8}, (8, 0)),
        ({"gpu_milli": 500}, (0, 500)),
        ({"gpus": 1, "gpu_milli": 460}, (0, 460)),  # the openb trace's way of asking for a share
        ({"gpu_milli": 1000}, (1, 0)),
        ({}, (0, 0)),
    ],
)
def test_gpus_split_into_whole_gpus_and_a_share_as_the_engine_reads_them(ask, split):
    assert gpu_split(ResourceAsk(**ask)) == split


def test_a_whole_gpu_pod_asks_exactly_for_its_reservation_on_its_pool():
    shape = pod_shape(placement(gpus=8, cpu=1.5, memory_gib=2), {"limits": {"ephemeral-storage": "10Gi"}})

    assert shape.resources.limits == {
        "ephemeral-storage": "10Gi",
        "cpu": "1500m",
        "memory": "2048Mi",
        "nvidia.com/gpu": "8",
    }
    assert shape.resources.requests == {"cpu": "1500m", "memory": "2048Mi"}
    assert shape.node_selector == {"mcsched.io/node-pool": "gpu-pool"}
    assert shape.labels == {"mcsched.io/reservation": "rsv-p1"}
    assert shape.annotations == {ANNOTATION_PLACEMENT: "p1"}


def test_the_reserved_node_is_preferred_first_and_the_authors_affinity_kept():
    """The pod may go to any node of its pool (required: the pool's label), its reserved node first
    (preferred, weight 100, one node per term as Kubernetes wants of a field selector). The
    author's own rules stay, and the author's object is not changed: a failover adds other nodes."""
    gpu_nodes = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    authored = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": gpu_nodes,
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                }
            ],
        },
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
    }
    shape = pod_shape(placement(gpus=4, nodes=("n1",)), None, authored)
    preferred = shape.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    assert [(p.weight, p.preference.match_expressions, p.preference.match_fields) for p in preferred] == [
        (5, [k8s.V1NodeSelectorRequirement(key="disk", operator="In", values=["ssd"])], None),
        (100, None, [k8s.V1NodeSelectorRequirement(key="metadata.name", operator="In", values=["n1"])]),
    ]
    required = shape.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert required.node_selector_terms[0].match_expressions[0].key == "zone"
    assert shape.affinity.pod_anti_affinity is not None
    assert len(authored["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]) == 1

    again = pod_shape(placement(gpus=4, nodes=("n2",)), None, shape.affinity)
    assert preferred_nodes(shape.affinity) == [["n1"]] and preferred_nodes(again.affinity) == [["n1"], ["n2"]]
    assert preferred_nodes(pod_shape(placement(gpus=4, nodes=("n1", "n2"))).affinity) == [["n1"], ["n2"]]


def test_a_pinned_pod_requires_its_reserved_nodes_within_each_of_the_authors_alternatives():
    """Pinned: every required term of the author's (alternatives) is kept once per reserved node,
    with the node's name added to its conditions; the author's preferences stay as they were, and
    no node preference is added (the nodes are required)."""
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    disk = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
    authored = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [zone, disk]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": disk}],
        }
    }
    shape = pod_shape(placement(gpus=4, nodes=("n1", "n2", "n1")), None, authored, pin_to_nodes=True)
    node_affinity = shape.affinity.node_affinity
    terms = node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert [(t.match_expressions[0].key, [f.values for f in t.match_fields]) for t in terms] == [
        ("zone", [["n1"]]),
        ("zone", [["n2"]]),
        ("disk", [["n1"]]),
        ("disk", [["n2"]]),
    ]
    assert [p.weight for p in node_affinity.preferred_during_scheduling_ignored_during_execution] == [5]
    assert len(authored["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]) == 2

    bare = pod_shape(placement(gpus=4, nodes=("n1",)), pin_to_nodes=True).affinity.node_affinity
    (term,) = bare.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert term.match_expressions is None and term.match_fields == [
        k8s.V1NodeSelectorRequirement(key="metadata.name", operator="In", values=["n1"])
    ]
    assert bare.preferred_during_scheduling_ignored_during_execution is None


@pytest.mark.parametrize("pinned", [False, True])
def test_the_operator_aims_its_pod_at_the_reserved_node_preferred_or_pinned(pinned):
    op = MultiClusterPodOperator(task_id="train", gpus=4, pin_to_reserved_nodes=pinned, **KPO_ARGS)
    op._aim_at(placement(gpus=4).model_copy(update={"connection_id": "mcsched_c"}))
    node_affinity = op.affinity.node_affinity
    required = node_affinity.required_during_scheduling_ignored_during_execution
    preferred = node_affinity.preferred_during_scheduling_ignored_during_execution
    assert op.kubernetes_conn_id == "mcsched_c" and op.node_selector == {"mcsched.io/node-pool": "gpu-pool"}
    assert (required is not None, preferred is not None) == (pinned, not pinned)


def preferred_nodes(affinity: k8s.V1Affinity) -> list[list[str]]:
    terms = affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    return [f.values for t in terms for f in t.preference.match_fields or []]


def test_a_gpu_share_is_an_annotation_not_a_gpu_limit():
    authored = k8s.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"})
    shape = pod_shape(placement(gpu_milli=250), authored)

    assert "nvidia.com/gpu" not in shape.resources.limits
    assert shape.annotations["mcsched.io/gpu-milli"] == "250"
