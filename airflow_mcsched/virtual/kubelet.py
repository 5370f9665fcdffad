"""The virtual kubelet: runs a bound pod's containers and writes its status, as a node's kubelet does.

A bound pod waits `container_start_seconds` (image pull and container creation), runs its init
containers one by one, then its containers together, and ends Succeeded (all exit 0) or Failed.
Containers never restart (every pod behaves as `restartPolicy: Never`). Status, events (Pulled,
Created, Started, Killing) and logs follow kubelet's shapes; all transitions run on the
cluster's timeline thread under the store lock.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_mcsched.virtual.events import KUBELET, EventRecorder
from airflow_mcsched.virtual.options import VirtualClusterOptions
from airflow_mcsched.virtual.pod_logs import ContainerLog
from airflow_mcsched.virtual.pods import PodDemand, choose_runtime, now_rfc3339, timed_duration, timed_exit_code
from airflow_mcsched.virtual.runtimes import SIGKILL_EXIT, ContainerRun, ProcessRun, TimedRun
from airflow_mcsched.virtual.scheduler import Placement
from airflow_mcsched.virtual.store import ObjectStore
from airflow_mcsched.virtual.timeline import Timeline, TimerHandle

# Host variables a process container inherits; everything else comes from the pod spec.
INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT")
_VAR_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


@dataclass
class PodRun:
    """What the kubelet tracks for one bound pod until it is gone."""

    namespace: str
    name: str
    uid: str
    placement: Placement
    demand: PodDemand
    logs: dict[str, ContainerLog]
    runs: dict[str, ContainerRun] = field(default_factory=dict)
    started_at: dict[str, str] = field(default_factory=dict)
    container_ids: dict[str, str] = field(default_factory=dict)
    init_queue: list[str] = field(default_factory=list)
    running: set[str] = field(default_factory=set)
    exit_codes: dict[str, int] = field(default_factory=dict)
    start_timer: TimerHandle | None = None
    deleting: bool = False
    terminal: bool = False
    released: bool = False


def _status_entry(
    container: dict[str, Any], state: dict[str, Any], ready: bool = False, container_id: str = ""
) -> dict[str, Any]:
    image = container.get("image", "")
    entry: dict[str, Any] = {
        "name": container["name"],
        "state": state,
        "lastState": {},
        "ready": ready,
        "restartCount": 0,
        "image": image,
        "imageID": "",
        "started": "running" in state,
    }
    if container_id:
        entry["imageID"] = f"docker.io/library/{image.split(':')[0]}@sha256:{container_id[:64]}"
        entry["containerID"] = f"containerd://{container_id}"
        if "terminated" in state:
            state["terminated"]["containerID"] = entry["containerID"]
    return entry


def _waiting(container: dict[str, Any], reason: str) -> dict[str, Any]:
    return _status_entry(container, {"waiting": {"reason": reason}})


def pod_condition(kind: str, status: bool, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now_rfc3339(),
    }
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """Add or replace a pod condition, keeping lastTransitionTime when the status did not change."""
    conditions = status.setdefault("conditions", [])
    for i, old in enumerate(conditions):
        if old["type"] == cond["type"]:
            if old["status"] == cond["status"]:
                cond["lastTransitionTime"] = old["lastTransitionTime"]
            conditions[i] = cond
            return
    conditions.append(cond)


class Kubelet:
    def __init__(
        self,
        store: ObjectStore,
        events: EventRecorder,
        timeline: Timeline,
        options: VirtualClusterOptions,
        work_dir: Path,
        node_ips: dict[str, str],
        release: Callable[[PodRun], None],
    ) -> None:
        self._store, self._events, self._timeline = store, events, timeline
        self._options, self._work_dir, self._node_ips = options, work_dir, node_ips
        self._release = release
        self.runs: dict[str, PodRun] = {}  # by pod uid
        self.logs: dict[str, dict[str, ContainerLog]] = {}  # by pod uid; kept until the pod is deleted
        self._next_ip = 2

    # --- entry points (called with the store lock held) -----------------------------------------

    def admit(self, pod: dict[str, Any], placement: Placement, demand: PodDemand) -> None:
        """A pod was bound to a node of ours: show it ContainerCreating, start it after the pull delay."""
        meta, spec = pod["metadata"], pod["spec"]
        names = [c["name"] for c in spec.get("initContainers") or []] + [c["name"] for c in spec["containers"]]
        logs = {n: ContainerLog(self._options.max_log_lines) for n in names}
        self.logs[meta["uid"]] = logs
        run = PodRun(meta["namespace"], meta["name"], meta["uid"], placement, demand, logs)
        run.init_queue = [c["name"] for c in spec.get("initContainers") or []]
        self.runs[run.uid] = run
        run.start_timer = self._timeline.call_soon(self._begin, run)

    def terminate(self, uid: str, grace_seconds: float) -> None:
        """Graceful delete: stop containers; the pod object goes once they all exited."""
        run = self.runs.get(uid)
        if run is None:
            return
        run.deleting = True
        if run.start_timer:
            run.start_timer.cancel()
        if not run.runs or run.terminal:
            self._timeline.call_soon(self._remove, run)
            return
        pod = self._pod(run)
        for name in list(run.running):
            if pod is not None:
                self._events.record(
                    pod,
                    "Normal",
                    "Killing",
                    f"Stopping container {name}",
                    KUBELET,
                    run.placement.node,
                    _field_path(pod, name),
                )
            run.runs[name].terminate(grace_seconds)

    def forget(self, uid: str) -> None:
        """The pod object is gone (forced or immediate delete): stop everything, free the node."""
        run = self.runs.pop(uid, None)
        self.logs.pop(uid, None)
        if run is None:
            return
        if run.start_timer:
            run.start_timer.cancel()
        for name in list(run.running):
            run.runs[name].kill()
        for log in run.logs.values():
            log.close()
        self._free(run)
        shutil.rmtree(self._work_dir / run.uid, ignore_errors=True)

    def node_lost(self, node: str) -> None:
        """The node stopped reporting: its pods fail as after eviction from a lost node."""
        for run in [r for r in self.runs.values() if r.placement.node == node and not r.terminal]:
            if run.start_timer:
                run.start_timer.cancel()
            for name in list(run.running):
                run.runs[name].kill()
            run.running.clear()

            def lost(pod: dict[str, Any], run: PodRun = run) -> None:
                status = pod["status"]
                status["phase"] = "Failed"
                status["reason"] = "NodeLost"
                status["message"] = f"Node {node} which was running pod {pod['metadata']['name']} is unresponsive"
                set_condition(
                    status,
                    pod_condition(
                        "DisruptionTarget",
                        True,
                        "DeletionByTaintManager",
                        "Taint manager: deleting due to NoExecute taint",
                    ),
                )
                set_condition(status, pod_condition("Ready", False, "PodFailed"))
                set_condition(status, pod_condition("ContainersReady", False, "PodFailed"))
                for key in ("containerStatuses", "initContainerStatuses"):
                    for entry in status.get(key) or []:
                        if "terminated" not in entry["state"]:
                            entry["state"] = {
                                "terminated": {
                                    "exitCode": SIGKILL_EXIT,
                                    "reason": "ContainerStatusUnknown",
                                    "message": "The container could not be located when the pod was terminated",
                                    "startedAt": run.started_at.get(entry["name"]),
                                    "finishedAt": now_rfc3339(),
                                }
                            }
                            entry["ready"] = entry["started"] = False

            self._update(run, lost)
            self._finish(run)

    # --- lifecycle -----------------------------------------------------------------------------

    def _pod(self, run: PodRun) -> dict[str, Any] | None:
        stored = self._store.get("Pod", run.namespace, run.name)
        return stored.obj if stored and stored.obj["metadata"]["uid"] == run.uid else None

    def _update(self, run: PodRun, mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        if self._pod(run) is None:
            return None
        return self._store.update("Pod", run.namespace, run.name, mutate).obj

    def _begin(self, run: PodRun) -> None:
        with self._store.lock:
            pod = self._pod(run)
            if pod is None or run.deleting or run.terminal:
                return
            spec = pod["spec"]
            self._next_ip += 1
            pod_ip = f"10.244.{(self._next_ip // 250) % 250}.{self._next_ip % 250 + 2}"
            has_init = bool(run.init_queue)

            def starting(p: dict[str, Any]) -> None:
                status = p["status"]
                host_ip = self._node_ips.get(run.placement.node, "")
                status.update(
                    hostIP=host_ip,
                    hostIPs=[{"ip": host_ip}],
                    podIP=pod_ip,
                    podIPs=[{"ip": pod_ip}],
                    startTime=now_rfc3339(),
                )
                set_condition(status, pod_condition("PodReadyToStartContainers", True))
                set_condition(
                    status,
                    pod_condition(
                        "Initialized",
                        not has_init,
                        "ContainersNotInitialized" if has_init else "",
                        f"containers with incomplete status: [{' '.join(run.init_queue)}]" if has_init else "",
                    ),
                )
                not_ready = f"containers with unready status: [{' '.join(c['name'] for c in spec['containers'])}]"
                set_condition(status, pod_condition("Ready", False, "ContainersNotReady", not_ready))
                set_condition(status, pod_condition("ContainersReady", False, "ContainersNotReady", not_ready))
                main_reason = "PodInitializing" if has_init else "ContainerCreating"
                status["containerStatuses"] = [_waiting(c, main_reason) for c in spec["containers"]]
                if has_init:
                    status["initContainerStatuses"] = [_waiting(c, "PodInitializing") for c in spec["initContainers"]]
                status["qosClass"] = status.get("qosClass", "BestEffort")

            self._update(run, starting)
            run.start_timer = self._timeline.call_later(self._options.container_start_seconds, self._start_first, run)

    def _start_first(self, run: PodRun) -> None:
        """Image "pulled": start the first init container, or all containers."""
        with self._store.lock:
            pod = self._pod(run)
            if pod is None or run.deleting or run.terminal:
                return
            run.start_timer = None
            if run.init_queue:
                self._start_container(run, run.init_queue[0])
            else:
                for c in pod["spec"]["containers"]:
                    self._start_container(run, c["name"])

    def _container(self, pod: dict[str, Any], name: str) -> tuple[dict[str, Any], str]:
        for key, status_key in (("initContainers", "initContainerStatuses"), ("containers", "containerStatuses")):
            for c in pod["spec"].get(key) or []:
                if c["name"] == name:
                    return c, status_key
        raise KeyError(name)

    def _start_container(self, run: PodRun, name: str) -> None:
        pod = self._pod(run)
        if pod is None:
            return
        container, status_key = self._container(pod, name)
        host, path = run.placement.node, _field_path(pod, name)
        image = container.get("image", "")
        self._events.record(
            pod, "Normal", "Pulled", f'Container image "{image}" already present on machine', KUBELET, host, path
        )
        runtime = choose_runtime(pod, container, self._options)
        run.running.add(name)

        def on_exit(code: int, reason: str, message: str) -> None:
            self._container_exited(run, name, code, reason, message)

        if runtime == "process":
            env = self._environment(pod, container, run)
            argv = [_expand(a, env) for a in (container.get("command") or []) + (container.get("args") or [])]
            process = ProcessRun(argv, env, self._work_dir / run.uid / name, self._timeline, run.logs[name], on_exit)
            run.runs[name] = process
            if not process.started:
                return  # StartError reported through on_exit
        else:
            run.runs[name] = TimedRun(
                self._timeline, timed_duration(pod, self._options), timed_exit_code(pod), run.logs[name], on_exit
            )
        self._events.record(pod, "Normal", "Created", f"Created container: {name}", KUBELET, host, path)
        self._events.record(pod, "Normal", "Started", f"Started container {name}", KUBELET, host, path)
        started = now_rfc3339()
        run.started_at[name] = started
        run.container_ids[name] = secrets.token_hex(32)
        is_main = status_key == "containerStatuses"

        def running(p: dict[str, Any]) -> None:
            status = p["status"]
            entries = status[status_key]
            for i, entry in enumerate(entries):
                if entry["name"] == name:
                    entries[i] = _status_entry(
                        container,
                        {"running": {"startedAt": started}},
                        ready=is_main,
                        container_id=run.container_ids[name],
                    )
            if is_main and all("running" in e["state"] for e in status["containerStatuses"]):
                status["phase"] = "Running"
                set_condition(status, pod_condition("Ready", True))
                set_condition(status, pod_condition("ContainersReady", True))

        self._update(run, running)

    def _container_exited(self, run: PodRun, name: str, code: int, reason: str, message: str) -> None:
        with self._store.lock:
            run.running.discard(name)
            run.exit_codes[name] = code
            run.logs[name].close()
            pod = self._pod(run)
            if pod is None:
                return
            container, status_key = self._container(pod, name)
            terminated = {
                "exitCode": code,
                "reason": reason,
                "startedAt": run.started_at.get(name, "1970-01-01T00:00:00Z"),
                "finishedAt": now_rfc3339(),
            }
            if message:
                terminated["message"] = message
            is_init = status_key == "initContainerStatuses"
            if is_init and run.init_queue and run.init_queue[0] == name:
                run.init_queue.pop(0)
            init_failed = is_init and code != 0
            start_next: list[str] = []
            if is_init and not init_failed and not run.deleting:
                start_next = run.init_queue[:1] or [c["name"] for c in pod["spec"]["containers"]]
            main_done = not is_init and not run.running
            pod_over = init_failed or main_done or (run.deleting and not run.running)
            codes = [run.exit_codes.get(c["name"]) for c in pod["spec"]["containers"]]
            succeeded = not init_failed and all(c == 0 for c in codes)

            def exited(p: dict[str, Any]) -> None:
                status = p["status"]
                for entry in status.get(status_key) or []:
                    if entry["name"] == name:
                        entry.update(
                            _status_entry(
                                container, {"terminated": terminated}, container_id=run.container_ids.get(name, "")
                            )
                        )
                if is_init and not init_failed and not run.init_queue:
                    set_condition(status, pod_condition("Initialized", True))
                if is_init and start_next and not run.init_queue:
                    for entry in status["containerStatuses"]:
                        entry["state"] = {"waiting": {"reason": "ContainerCreating"}}
                if not is_init:
                    status["phase"] = "Running" if run.running else status["phase"]
                    set_condition(
                        status,
                        pod_condition(
                            "Ready", False, "ContainersNotReady", f"containers with unready status: [{name}]"
                        ),
                    )
                    set_condition(
                        status,
                        pod_condition(
                            "ContainersReady", False, "ContainersNotReady", f"containers with unready status: [{name}]"
                        ),
                    )
                if pod_over:
                    status["phase"] = "Succeeded" if succeeded else "Failed"
                    why = "PodCompleted" if succeeded else "PodFailed"
                    set_condition(status, pod_condition("Ready", False, why))
                    set_condition(status, pod_condition("ContainersReady", False, why))
                    if init_failed:
                        for entry in status["containerStatuses"]:
                            entry["state"] = {"waiting": {"reason": "PodInitializing"}}

            self._update(run, exited)
            if pod_over:
                for other in list(run.running):  # an init failure leaves nothing running; be safe
                    run.runs[other].kill()
                self._finish(run)
                if run.deleting:
                    self._remove(run)
                return
            for nxt in start_next:
                self._start_container(run, nxt)

    def _finish(self, run: PodRun) -> None:
        run.terminal = True
        for log in run.logs.values():
            log.close()
        self._free(run)

    def _free(self, run: PodRun) -> None:
        if not run.released:
            run.released = True
            self._release(run)

    def _remove(self, run: PodRun) -> None:
        """End of a graceful delete: the object disappears (watchers see DELETED)."""
        with self._store.lock:
            if self._pod(run) is not None:
                self._store.delete("Pod", run.namespace, run.name)
            self._events.forget(run.uid)
            self.forget(run.uid)

    # --- container environment ------------------------------------------------------------------

    def _environment(self, pod: dict[str, Any], container: dict[str, Any], run: PodRun) -> dict[str, str]:
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        # `python` inside a shell command should be this interpreter too, as argv[0] is
        env["PATH"] = os.pathsep.join(filter(None, [os.path.dirname(sys.executable), env.get("PATH", "")]))
        env.update(HOSTNAME=pod["metadata"]["name"], PYTHONUNBUFFERED="1")
        if run.placement.gpus:
            env["NVIDIA_VISIBLE_DEVICES"] = ",".join(str(i) for i in run.placement.gpus)
        if run.placement.gpu_milli:
            env["MCSCHED_GPU_MILLI"] = str(run.placement.gpu_milli)
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = _expand(str(item["value"]), env)
            elif "valueFrom" in item:
                env[item["name"]] = _field_ref(pod, (item["valueFrom"].get("fieldRef") or {}).get("fieldPath", ""))
        return env


def _field_ref(pod: dict[str, Any], path: str) -> str:
    """The downward API subset: names, namespace, uid, node, IPs, one label or annotation."""
    match = re.match(r"^metadata\.(labels|annotations)\['(.+)'\]$", path)
    if match:
        return (pod["metadata"].get(match.group(1)) or {}).get(match.group(2), "")
    simple = {
        "metadata.name": pod["metadata"]["name"],
        "metadata.namespace": pod["metadata"]["namespace"],
        "metadata.uid": pod["metadata"]["uid"],
        "spec.nodeName": pod["spec"].get("nodeName", ""),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
        "status.podIP": pod["status"].get("podIP", ""),
        "status.hostIP": pod["status"].get("hostIP", ""),
    }
    return simple.get(path, "")


def _expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion in command, args and env values; `$$` escapes."""
    return _VAR_REF.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def _field_path(pod: dict[str, Any], name: str) -> str:
    init = any(c["name"] == name for c in pod["spec"].get("initContainers") or [])
    return f"spec.{'initContainers' if init else 'containers'}{{{name}}}"
