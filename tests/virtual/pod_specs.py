"""Pod bodies and waits shared by the virtual-cluster tests (plain dicts, as on the wire)."""

from __future__ import annotations

from typing import Any

from airflow_mcsched.virtual.fleet import wait_for


def pod(
    name: str,
    *,
    gpus: int = 0,
    cpu: str = "100m",
    memory: str = "64Mi",
    duration: float | None = None,
    exit_code: int | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    command: list[str] | None = None,
    node_selector: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A one-container pod (container `base`, restartPolicy Never, as KPO makes them)."""
    notes = dict(annotations or {})
    if duration is not None:
        notes["mcsched.io/duration-seconds"] = str(duration)
    if exit_code is not None:
        notes["mcsched.io/exit-code"] = str(exit_code)
    limits = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    container: dict[str, Any] = {"name": "base", "image": "busybox:1.36", "resources": {"limits": limits}}
    if command:
        container["command"] = command
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": notes},
        "spec": {"restartPolicy": "Never", "containers": [container], **spec},
    }
    if node_selector:
        body["spec"]["nodeSelector"] = node_selector
    return body


def wait_phase(api, name: str, phases: str | tuple[str, ...], namespace: str = "default", timeout: float = 10.0):
    wanted = (phases,) if isinstance(phases, str) else phases

    def reached():
        p = api.read_namespaced_pod(name, namespace)
        return p if p.status.phase in wanted else None

    return wait_for(reached, timeout, what=f"pod {name} in {wanted}")


def condition(pod_obj, kind: str):
    return next((c for c in pod_obj.status.conditions or [] if c.type == kind), None)


def events_of(api, name: str, namespace: str = "default") -> list:
    return api.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items


def log_text(api, name: str, namespace: str = "default", **options: Any) -> str:
    """Pod log as text (read raw: the generated client's `str` handling of logs is unreliable)."""
    return api.read_namespaced_pod_log(name, namespace, _preload_content=False, **options).data.decode()
