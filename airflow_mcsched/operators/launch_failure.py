"""Telling "the chosen cluster could not run the step" apart from "the step itself failed".

Only the first is a cluster fault worth a new placement elsewhere: the cluster's API is down or
refuses connections, or the pod was never scheduled or never started there. A pod that ran and
failed, a bad image or an invalid spec would fail anywhere and end the try instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from airflow.providers.cncf.kubernetes.kubernetes_helper_functions import (
    KubernetesApiException,
    PodLaunchFailedException,
)
from airflow.providers.cncf.kubernetes.utils.pod_manager import PodLaunchTimeoutException
from airflow.sdk.exceptions import AirflowException
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

# A cluster fault's reason, as the service records it.
API_UNAVAILABLE = "ClusterApiUnavailable"
NOT_SCHEDULED = "PodNotScheduled"
NOT_STARTED = "PodNotStarted"

_SCHEDULE_TIMEOUT = "too long to be scheduled"
_START_TIMEOUT = "too long to start"
_FAILED_BEFORE_START = "failed before containers started"


class ClusterLaunchFailure(AirflowException):
    """The chosen cluster could not launch the step's pod; `reason` is a FaultReport reason."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


def _chain(err: BaseException) -> Iterator[BaseException]:
    """The error and the ones it was raised from or during (KPO's cleanup raises over the cause)."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def api_unavailable(err: BaseException) -> bool:
    """Connection refused or reset, timeouts, or the API server answering 5xx/429."""
    if isinstance(err, ApiException):
        return err.status in (None, 0, 429) or err.status >= 500
    return isinstance(err, Urllib3Error | KubernetesApiException | ConnectionError | TimeoutError)


def _from_message(message: str) -> str | None:
    lowered = message.lower()
    if _SCHEDULE_TIMEOUT in lowered:
        return NOT_SCHEDULED
    if _START_TIMEOUT in lowered or _FAILED_BEFORE_START in lowered:
        return NOT_STARTED
    return None


def launch_failure(err: BaseException) -> ClusterLaunchFailure | None:
    """The cluster fault behind an error raised before the pod ran, if it is one."""
    for cause in _chain(err):
        if isinstance(cause, ClusterLaunchFailure):
            return cause
        if isinstance(cause, PodLaunchTimeoutException | PodLaunchFailedException):
            reason = _from_message(str(cause))
            if reason:
                return ClusterLaunchFailure(reason, str(cause))
        if api_unavailable(cause):
            return ClusterLaunchFailure(API_UNAVAILABLE, f"{type(cause).__name__}: {cause}"[:1500])
    return None


def launch_failure_of_event(event: Mapping[str, Any]) -> ClusterLaunchFailure | None:
    """A KubernetesPodTrigger event that says the pod never got scheduled or started."""
    if event.get("status") != "timeout":
        return None
    message = str(event.get("message") or "")
    reason = _from_message(message)
    return ClusterLaunchFailure(reason, message) if reason else None
