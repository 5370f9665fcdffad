"""Which errors mean "this cluster could not launch the step" (fail over) and which end the try."""

from __future__ import annotations

import pytest
from airflow.providers.cncf.kubernetes.kubernetes_helper_functions import PodLaunchFailedException
from airflow.providers.cncf.kubernetes.utils.pod_manager import PodLaunchTimeoutException
from airflow.sdk.exceptions import AirflowException
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, NewConnectionError

from airflow_mcsched.operators.launch_failure import launch_failure, launch_failure_of_event

NOT_SCHEDULED = "Pod took too long to be scheduled on the cluster, giving up. More than 2s."
NOT_STARTED = "Pod took too long to start. More than 120s. Check the pod events in kubernetes."


def raised_during(cause: BaseException, err: BaseException) -> BaseException:
    """`err` raised while `cause` was being handled, as KPO's cleanup does in its `finally`."""
    try:
        try:
            raise cause
        finally:
            raise err
    except BaseException as caught:
        return caught


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ApiException(status=503, reason="Service Unavailable"), "ClusterApiUnavailable"),
        (ApiException(status=500), "ClusterApiUnavailable"),
        (MaxRetryError(None, "/api/v1/pods", NewConnectionError(None, "refused")), "ClusterApiUnavailable"),
        (PodLaunchTimeoutException(NOT_SCHEDULED), "PodNotScheduled"),
        (PodLaunchTimeoutException(NOT_STARTED), "PodNotStarted"),
        (raised_during(PodLaunchTimeoutException(NOT_SCHEDULED), AirflowException("Pod x returned a failure.")),
         "PodNotScheduled"),
        (ApiException(status=403, reason="Forbidden"), None),  # would fail on any cluster
        (ApiException(status=422, reason="Invalid pod"), None),
        (PodLaunchFailedException("Image cannot be pulled, unable to start: ErrImagePull"), None),
        (AirflowException("Pod x returned a failure."), None),
    ],
)  # fmt: skip
def test_cluster_faults_are_told_apart_from_failures_of_the_step(error, reason):
    failure = launch_failure(error)
    assert (failure.reason if failure else None) == reason


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"status": "timeout", "message": NOT_SCHEDULED}, "PodNotScheduled"),
        ({"status": "timeout", "message": "Pod default/x reached the task's execution_timeout deadline."}, None),
        ({"status": "failed", "message": "pod failed"}, None),
        ({"status": "success"}, None),
    ],
)
def test_a_pod_trigger_event_is_a_cluster_fault_only_when_the_pod_never_started(event, reason):
    failure = launch_failure_of_event(event)
    assert (failure.reason if failure else None) == reason
