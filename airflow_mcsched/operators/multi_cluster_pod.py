"""MultiClusterPodOperator: a KubernetesPodOperator that says what it needs instead of naming a cluster.

The placement service picks the cluster and node pool; the operator points itself there, shapes
the pod to the reservation, runs it with KPO's own machinery, and ends the placement however the
step ends. When the chosen cluster cannot launch the pod, it reports the fault and asks again,
avoiding that cluster, up to `max_placement_attempts` times.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.sdk.exceptions import AirflowException

from airflow_mcsched.operators.held_placement import HeldPlacement
from airflow_mcsched.operators.launch_failure import ClusterLaunchFailure, launch_failure, launch_failure_of_event
from airflow_mcsched.operators.lineage import admission_lines
from airflow_mcsched.operators.links import PlacementLink
from airflow_mcsched.operators.pod_shape import pod_shape
from airflow_mcsched.operators.resource_request import (
    check_at_parse_time,
    merge_resource_fields,
    pop_resource_fields,
    validated_ask,
)
from airflow_mcsched.operators.task_placements import TaskPlacements
from airflow_mcsched.service.schemas import PlacementOut, PlacementState, ResourceAsk
from airflow_mcsched.triggers.admission import (
    Admission,
    PlacementNotGranted,
    granted_placement_id,
    judge,
    refusal,
    why_waiting,
)

if TYPE_CHECKING:
    from airflow.sdk import Context
    from kubernetes.client import models as k8s

DEFAULT_PLACEMENT_TIMEOUT = timedelta(hours=6)
EVENT_PLACEMENT_KEY = "mcsched_placement_id"  # rides in KPO's trigger_kwargs, comes back in its events
XCOM_PLACEMENT_ID = "placement_id"
XCOM_PLACEMENT_CLUSTER = "placement_cluster"
KPO_CACHED_CLIENTS = ("hook", "client", "pod_manager")


def _seconds(value: timedelta | float) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class MultiClusterPodOperator(KubernetesPodOperator):
    """Run one pod wherever the GPU fleet has room for it.

    Say what the step needs, as keyword arguments or bundled in ``resource_ask`` (a ``ResourceAsk`` or
    a dict; keyword arguments win), and give the usual KubernetesPodOperator arguments (image,
    cmds, arguments, env_vars, ...) but no ``kubernetes_conn_id``::

        train = MultiClusterPodOperator(
            task_id="train",
            kind="training",
            gpus=8,
            gpu_types=["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"],
            needs_rdma=True,
            data=[{"location": "s3://ml-eu/clicks/", "size_gib": 500}],
            expected_duration=timedelta(hours=6),
            image="ghcr.io/acme/trainer:1.4",
            cmds=["python", "train.py"],
        )

    Resource fields (see ``ResourceAsk``): team, project (else the DAG's ``team``/``project`` params,
    else its ``team:x``/``project:y`` tags), kind, gpus, gpu_milli (a share of one GPU), gpu_types,
    min_gpu_memory_gib, cpu, memory_gib, expected_duration (timedelta or seconds), interruptible,
    priority_class, data, needs_rdma, needs_fast_storage, failure_domains, avoid_failure_domains,
    avoid_clusters, spread_group, max_cost_per_hour, deadline.

    :param resource_ask: the request as a ``ResourceAsk`` or mapping (templated).
    :param placement_id: use this placement, handed over by a ``PlacementSensor`` (templated, e.g.
        ``"{{ ti.xcom_pull('wait_for_gpus') }}"``); if it is no longer admitted, the step asks anew.
    :param placement_timeout: how long to wait for admission before failing the try.
    :param placement_poll_interval: seconds between the first admission polls (they back off).
    :param max_placement_attempts: clusters to try within one task try when launches fail.
    :param cluster_probe_timeout: seconds the chosen cluster's API has to answer before launch.
    :param lease_renew_interval: seconds between lease renewals while the pod runs (sync mode);
        None renews at a third of the lease left. A renewal that finds the step preempted stops
        its pod and fails the try with the reason.
    :param pin_to_reserved_nodes: require the nodes the placement reserved (required node affinity)
        instead of preferring them. By default the pod needs its node pool and only prefers its
        nodes: when one filled meanwhile, it runs on another node of the pool rather than wait.
        Pinned, the engine's packing holds node for node, but a pod whose node something outside
        mcsched took is not scheduled, and the step moves to another placement after KPO's
        ``schedule_timeout_seconds``.

    The placement id and cluster are pushed to XCom (``placement_id``, ``placement_cluster``).
    ``durable`` defaults to False: a new try gets a new placement, so it does not adopt old pods.
    """

    template_fields: Sequence[str] = (*KubernetesPodOperator.template_fields, "resource_ask", "placement_id")
    operator_extra_links = (PlacementLink(),)

    def __init__(
        self,
        *,
        resource_ask: ResourceAsk | Mapping[str, Any] | None = None,
        placement_id: str | None = None,
        placement_timeout: timedelta | float = DEFAULT_PLACEMENT_TIMEOUT,
        placement_poll_interval: float = 5.0,
        max_placement_attempts: int = 3,
        cluster_probe_timeout: float = 10.0,
        lease_renew_interval: float | None = None,
        pin_to_reserved_nodes: bool = False,
        **kwargs: Any,
    ) -> None:
        fields = pop_resource_fields(kwargs)
        if kwargs.get("kubernetes_conn_id"):
            raise ValueError("MultiClusterPodOperator chooses the cluster itself; remove kubernetes_conn_id")
        kwargs["kubernetes_conn_id"] = None
        kwargs.setdefault("durable", False)
        super().__init__(**kwargs)
        self.resource_ask = merge_resource_fields(resource_ask, fields)
        check_at_parse_time(self.resource_ask)
        if max_placement_attempts < 1:
            raise ValueError("max_placement_attempts must be at least 1")
        self.placement_id = placement_id
        self.placement_timeout = _seconds(placement_timeout)
        self.placement_poll_interval = placement_poll_interval
        self.max_placement_attempts = max_placement_attempts
        self.cluster_probe_timeout = cluster_probe_timeout
        self.lease_renew_interval = lease_renew_interval
        self.pin_to_reserved_nodes = pin_to_reserved_nodes
        self._held: HeldPlacement | None = None
        self._pod_running = False
        self._authored_affinity = self.affinity  # each placement attempt adds its nodes to this

    # -- the story ------------------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        placements = TaskPlacements.of(context)
        handed = self._handed_over(placements)
        placement = handed if handed and judge(handed) is Admission.ADMITTED else placements.submit(self._ask(handed))
        placement = self._await_admission(placement, placements, context)
        return self._run_with_failover(placement, placements, context)

    def resume_after_admission(self, context: Context, event: dict[str, Any]) -> Any:
        """Deferrable mode: the PlacementTrigger saw the placement admitted (or gave up)."""
        placements = TaskPlacements.of(context)
        placement = self._granted(event, placements)
        self._record_admission(placement, context)
        return self._run_with_failover(placement, placements, context)

    def trigger_reentry(self, context: Context, event: dict[str, Any]) -> Any:
        """Deferrable mode: the pod ended, or never got scheduled (then fail over)."""
        placements = TaskPlacements.of(context)
        placement = placements.get(event[EVENT_PLACEMENT_KEY])
        self._aim_at(placement)
        try:
            with self._holding(placement, placements):
                failure = launch_failure_of_event(event)
                if failure is not None:
                    raise failure
                return super().trigger_reentry(context, event)
        except ClusterLaunchFailure as failure:
            self._delete_pod_quietly(event["name"], event["namespace"])
            placement = self._next_placement(placement, failure, placements, context)
            return self._run_with_failover(placement, placements, context)

    def on_kill(self) -> None:
        super().on_kill()
        if self._held is not None:
            self._held.release("killed", "the task was stopped")

    # -- getting a placement --------------------------------------------------------------------
    def _handed_over(self, placements: TaskPlacements) -> PlacementOut | None:
        """The placement a sensor handed to this task, if one was named."""
        placement_id = (self.placement_id or "").strip()
        if placement_id in ("", "None"):
            return None
        placement = placements.get(placement_id)
        if self.task_id not in (placement.holder_task_id, placement.task.task_id):
            raise AirflowException(
                f"placement {placement_id} belongs to task {placement.task.task_id!r} and was not handed to "
                f"{self.task_id!r}; set hold_for_task_id={self.task_id!r} on the sensor"
            )
        if placement.state is not PlacementState.ADMITTED:
            self.log.info("Placement %s is %s; this step asks for its own", placement_id, placement.state.value)
        return placement

    def _ask(self, handed: PlacementOut | None) -> ResourceAsk:
        if self.resource_ask or handed is None:
            return validated_ask(self.resource_ask)
        return handed.ask.model_copy(update={"avoid_clusters": []})

    def _await_admission(self, placement: PlacementOut, placements: TaskPlacements, context: Context) -> PlacementOut:
        """Sync: poll until admitted. Deferrable: wait in the triggerer, resume in `resume_after_admission`."""
        if self.deferrable and judge(placement) is Admission.WAITING:
            trigger = placements.trigger_for(
                placement, timeout_seconds=self.placement_timeout, poll_seconds=self.placement_poll_interval
            )
            self.log.info("Placement %s is queued (%s); deferring until admitted", placement.id, why_waiting(placement))
            self.defer(
                trigger=trigger,
                method_name="resume_after_admission",
                timeout=timedelta(seconds=self.placement_timeout + 120),
            )
        try:
            placement = placements.wait_until_admitted(
                placement,
                timeout_seconds=self.placement_timeout,
                poll_seconds=self.placement_poll_interval,
                log=self.log,
            )
        except BaseException as err:
            placements.cancel_quietly(placement.id, "killed", f"not admitted: {err}", self.log)
            raise
        self._record_admission(placement, context)
        return placement

    def _granted(self, event: dict[str, Any], placements: TaskPlacements) -> PlacementOut:
        try:
            placement = placements.get(granted_placement_id(event))
            verdict = judge(placement)
            if verdict is not Admission.ADMITTED:
                raise refusal(placement, verdict)
        except PlacementNotGranted as err:
            placements.cancel_quietly(event["placement_id"], "killed", str(err), self.log)
            raise
        return placement

    def _record_admission(self, placement: PlacementOut, context: Context) -> None:
        for line in admission_lines(placement):
            self.log.info(line)
        ti = context["ti"]
        ti.xcom_push(key=XCOM_PLACEMENT_ID, value=placement.id)
        ti.xcom_push(key=XCOM_PLACEMENT_CLUSTER, value=placement.cluster)

    def _next_placement(
        self, failed: PlacementOut, failure: ClusterLaunchFailure, placements: TaskPlacements, context: Context
    ) -> PlacementOut:
        """The fault is reported; ask again, avoiding every cluster that failed this try."""
        self.log.warning("Cluster %s could not launch the step: %s", failed.cluster, failure)
        if failed.attempt >= self.max_placement_attempts:
            raise AirflowException(
                f"gave up after {failed.attempt} placement attempts (max_placement_attempts); last: {failure}"
            ) from failure
        avoid = sorted({*failed.ask.avoid_clusters, *([failed.cluster] if failed.cluster else [])})
        ask = failed.ask.model_copy(update={"avoid_clusters": avoid})
        self.log.info("Asking for placement attempt %d, avoiding %s", failed.attempt + 1, avoid)
        return self._await_admission(placements.submit(ask, attempt=failed.attempt + 1), placements, context)

    # -- running on the chosen cluster ------------------------------------------------------------
    def _run_with_failover(self, placement: PlacementOut, placements: TaskPlacements, context: Context) -> Any:
        while True:
            try:
                return self._run_on(placement, placements, context)
            except ClusterLaunchFailure as failure:
                if self.pod is not None:
                    self._delete_pod_quietly(self.pod.metadata.name, self.pod.metadata.namespace)
                placement = self._next_placement(placement, failure, placements, context)

    def _run_on(self, placement: PlacementOut, placements: TaskPlacements, context: Context) -> Any:
        self._aim_at(placement)
        with self._holding(placement, placements):
            self._probe_cluster()
            return self._launch(context)

    @contextmanager
    def _holding(self, placement: PlacementOut, placements: TaskPlacements) -> Iterator[HeldPlacement]:
        self._held = HeldPlacement(placements.hook, placement, self.log)
        with self._held.until_done():
            yield self._held

    def _aim_at(self, placement: PlacementOut) -> None:
        """Point KPO at the placement's cluster; shape the pod to its reservation (its pool, its nodes
        first or, pinned, only)."""
        if not placement.connection_id:
            raise AirflowException(f"placement {placement.id} names no Airflow connection for {placement.cluster}")
        shape = pod_shape(
            placement, self.container_resources, self._authored_affinity, pin_to_nodes=self.pin_to_reserved_nodes
        )
        self.kubernetes_conn_id = placement.connection_id
        self.namespace = placement.namespace or self.namespace
        self.container_resources = shape.resources
        self.node_selector = {**(self.node_selector or {}), **shape.node_selector}
        self.affinity = shape.affinity
        self.labels = {**(self.labels or {}), **shape.labels}
        self.annotations = {**(self.annotations or {}), **shape.annotations}
        self.trigger_kwargs = {**(self.trigger_kwargs or {}), EVENT_PLACEMENT_KEY: placement.id}
        self.pod = self.pod_request_obj = self.remote_pod = None
        self._pod_running = False
        for cached in KPO_CACHED_CLIENTS:  # KPO caches clients of the previous cluster
            self.__dict__.pop(cached, None)

    def _probe_cluster(self) -> None:
        """One cheap read first, so a dead cluster fails over in seconds rather than after KPO's retries."""
        try:
            self.client.list_namespaced_pod(self.namespace, limit=1, _request_timeout=self.cluster_probe_timeout)
        except Exception as err:
            failure = launch_failure(err)
            if failure is None:
                raise
            raise failure from err

    def _launch(self, context: Context) -> Any:
        try:
            return super().execute(context)
        except Exception as err:
            explained = self._explain_launch_error(err)
            if explained is err:
                raise
            raise explained from err

    def _explain_launch_error(self, err: Exception) -> Exception:
        preempted = self._held.preempted_reason if self._held else None
        if preempted:
            return AirflowException(f"the step was preempted and its pod stopped: {preempted}")
        if not self._pod_running:
            return launch_failure(err) or err
        return err

    # -- KPO hooks: know when the pod exists and when it runs -------------------------------------
    def get_or_create_pod(self, pod_request_obj: k8s.V1Pod, context: Context) -> k8s.V1Pod:
        pod = super().get_or_create_pod(pod_request_obj, context)
        if self._held is not None:
            try:
                on_preempted = None if self.deferrable else self._stop_preempted_pod  # deferred: the sync renews
                self._held.started(pod.metadata.name, on_preempted, self.lease_renew_interval)
            except BaseException:
                self._delete_pod_quietly(pod.metadata.name, pod.metadata.namespace)  # it would run unaccounted
                raise
        return pod

    def await_pod_start(self, pod: k8s.V1Pod) -> None:
        super().await_pod_start(pod)
        self._pod_running = True

    def _stop_preempted_pod(self, reason: str) -> None:
        if self.pod is not None:
            self._delete_pod_quietly(self.pod.metadata.name, self.pod.metadata.namespace)

    def _delete_pod_quietly(self, name: str, namespace: str) -> None:
        try:
            self.client.delete_namespaced_pod(name, namespace, _request_timeout=self.cluster_probe_timeout)
            self.log.info("Deleted pod %s/%s", namespace, name)
        except Exception as err:
            self.log.warning("Could not delete pod %s/%s (the cluster may be down): %s", namespace, name, err)
