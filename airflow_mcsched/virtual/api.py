"""The HTTP face of a virtual cluster: the Kubernetes REST paths our clients use, plus `/_virtual` admin.

Every route goes through `_handler`, which applies faults, checks the bearer token and turns an
`ApiError` into a Kubernetes `Status` body. Watches and followed logs are chunked streams fed
from the store and the container logs through the event loop (the writers run on other threads).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from airflow_mcsched.virtual.cluster import VirtualCluster
from airflow_mcsched.virtual.errors import (
    ApiError,
    bad_request,
    internal_error,
    not_found,
    service_unavailable,
    unauthorized,
)
from airflow_mcsched.virtual.nodes import KUBELET_VERSION
from airflow_mcsched.virtual.pod_logs import ContainerLog
from airflow_mcsched.virtual.selectors import FIELDS_OF_KIND, parse_field_selector, parse_label_selector
from airflow_mcsched.virtual.store import dump

JSON = "application/json"
DEFAULT_WATCH_TIMEOUT = 1800  # the apiserver's --min-request-timeout
MAX_LINES_PER_CHUNK = 256

Endpoint = Callable[[Request, VirtualCluster], Awaitable[Response]]

# Resources listed by discovery (/api/v1); verbs are the ones this server implements.
_RESOURCES = [
    ("namespaces", "Namespace", False, ["create", "get", "list", "watch"]),
    ("nodes", "Node", False, ["get", "list", "patch", "watch"]),
    ("nodes/status", "Node", False, ["get"]),
    ("pods", "Pod", True, ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
    ("pods/log", "Pod", True, ["get"]),
    ("pods/status", "Pod", True, ["get"]),
    ("events", "Event", True, ["get", "list", "watch"]),
]


def _json(body: bytes | dict[str, Any], status: int = 200) -> Response:
    return Response(body if isinstance(body, bytes) else dump(body), status_code=status, media_type=JSON)


def _error(err: ApiError) -> Response:
    return _json(err.status(), err.code)


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("true", "1")


def _int(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"invalid value for {name}: {value!r}") from None


async def _body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise bad_request(f"couldn't get version/kind; json parse error: {err}") from None


def _handler(fn: Endpoint, cluster: VirtualCluster, admin: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """Faults (not on admin paths), token check, ApiError -> Status."""

    async def endpoint(request: Request) -> Response:
        try:
            if not admin:
                verdict = cluster.faults.verdict()
                if verdict.delay:
                    await asyncio.sleep(verdict.delay)
                if verdict.fail_with == 503:
                    raise service_unavailable()
                if verdict.fail_with == 500:
                    raise internal_error("virtual cluster fault: injected internal error")
            header = request.headers.get("authorization", "")
            if not hmac.compare_digest(header.encode(), f"Bearer {cluster.token}".encode()):
                raise unauthorized()
            return await fn(request, cluster)
        except ApiError as err:
            return _error(err)
        except ValueError as err:  # admin input
            return _error(bad_request(str(err)))

    return endpoint


# --- discovery and health ---------------------------------------------------------------------


async def version(request: Request) -> Response:
    major, minor = KUBELET_VERSION.lstrip("v").split(".")[:2]
    return _json(
        {
            "major": major,
            "minor": minor,
            "gitVersion": f"{KUBELET_VERSION}-mcsched-virtual",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.25",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    )


async def healthz(request: Request) -> Response:
    return Response(b"ok", media_type="text/plain")


async def api_versions(request: Request, cluster: VirtualCluster) -> Response:
    host = request.url.netloc
    return _json(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        }
    )


async def api_group_list(request: Request, cluster: VirtualCluster) -> Response:
    return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})


async def api_resources(request: Request, cluster: VirtualCluster) -> Response:
    resources = [
        {
            "name": name,
            "singularName": "" if "/" in name else kind.lower(),
            "namespaced": namespaced,
            "kind": kind,
            "verbs": verbs,
        }
        for name, kind, namespaced, verbs in _RESOURCES
    ]
    return _json({"kind": "APIResourceList", "groupVersion": "v1", "resources": resources})


# --- list, get, watch -------------------------------------------------------------------------


async def _watch_stream(
    request: Request, cluster: VirtualCluster, kind: str, namespace: str | None
) -> AsyncIterator[bytes]:
    labels = parse_label_selector(request.query_params.get("labelSelector"))
    fields = parse_field_selector(request.query_params.get("fieldSelector"), FIELDS_OF_KIND[kind])
    timeout = _int(request, "timeoutSeconds") or DEFAULT_WATCH_TIMEOUT
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def deliver(line: bytes | None) -> None:
        with contextlib.suppress(RuntimeError):  # loop closed: the server is gone
            loop.call_soon_threadsafe(queue.put_nowait, line)

    watcher = cluster.store.watch(kind, namespace, labels, fields, request.query_params.get("resourceVersion"), deliver)

    async def lines() -> AsyncIterator[bytes]:
        deadline = loop.time() + timeout
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return
                try:
                    line = await asyncio.wait_for(queue.get(), remaining)
                except TimeoutError:
                    return
                batch = []
                while line is not None:
                    batch.append(line)
                    if queue.empty() or len(batch) >= MAX_LINES_PER_CHUNK:
                        break
                    line = queue.get_nowait()
                if batch:
                    yield b"".join(batch)
                if line is None:
                    return
        finally:
            cluster.store.unwatch(watcher)

    return lines()


async def _list_or_watch(request: Request, cluster: VirtualCluster, kind: str, namespace: str | None) -> Response:
    if _flag(request, "watch"):
        stream = await _watch_stream(request, cluster, kind, namespace)
        return StreamingResponse(stream, media_type=JSON)
    labels = parse_label_selector(request.query_params.get("labelSelector"))
    fields = parse_field_selector(request.query_params.get("fieldSelector"), FIELDS_OF_KIND[kind])
    body = cluster.store.list(
        kind, namespace, labels, fields, _int(request, "limit") or 0, request.query_params.get("continue", "")
    )
    return _json(body)


def _get(kind: str, namespaced: bool = True) -> Endpoint:
    async def get(request: Request, cluster: VirtualCluster) -> Response:
        ns = request.path_params["namespace"] if namespaced else ""
        return _json(cluster.store.require(kind, ns, request.path_params["name"]).raw)

    return get


def _collection(kind: str, namespaced: bool = True) -> Endpoint:
    """List or watch; listing a namespace that does not exist gives an empty list, as in Kubernetes."""

    async def collection(request: Request, cluster: VirtualCluster) -> Response:
        namespace = request.path_params.get("namespace") if namespaced else None
        return await _list_or_watch(request, cluster, kind, namespace)

    return collection


async def namespace(request: Request, cluster: VirtualCluster) -> Response:
    name = request.path_params["namespace"]
    stored = cluster.store.get("Namespace", "", name)
    if stored is None:
        raise not_found("Namespace", name)
    return _json(stored.raw)


# --- writes -----------------------------------------------------------------------------------


async def namespaces(request: Request, cluster: VirtualCluster) -> Response:
    if request.method == "POST":
        return _json(cluster.create_namespace(await _body(request)).raw, 201)
    return await _list_or_watch(request, cluster, "Namespace", None)


async def pods(request: Request, cluster: VirtualCluster) -> Response:
    namespace = request.path_params["namespace"]
    if request.method == "POST":
        dry_run = request.query_params.get("dryRun") == "All"
        return _json(cluster.create_pod(namespace, await _body(request), dry_run), 200 if dry_run else 201)
    if request.method == "DELETE":
        labels = parse_label_selector(request.query_params.get("labelSelector"))
        fields = parse_field_selector(request.query_params.get("fieldSelector"), FIELDS_OF_KIND["Pod"])
        grace = _int(request, "gracePeriodSeconds")
        with cluster.store.lock:
            chosen = [
                o.name
                for o in cluster.store.objects("Pod", namespace)
                if labels.matches(o.labels) and fields.matches(o.fields)
            ]
            items = [cluster.delete_pod(namespace, name, grace) for name in chosen]
            rv = str(cluster.store.resource_version)
        head = dump({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}})
        return _json(head[:-1] + b',"items":[' + b",".join(items) + b"]}")
    return await _list_or_watch(request, cluster, "Pod", namespace)


async def pod(request: Request, cluster: VirtualCluster) -> Response:
    namespace, name = request.path_params["namespace"], request.path_params["name"]
    if request.method == "PATCH":
        content_type = request.headers.get("content-type", "application/strategic-merge-patch+json")
        return _json(cluster.patch_pod(namespace, name, content_type, await _body(request)))
    if request.method == "PUT":
        return _json(cluster.replace_pod(namespace, name, await _body(request)))
    if request.method == "DELETE":
        body = await _body(request) or {}
        grace = _int(request, "gracePeriodSeconds")
        if isinstance(body, dict) and body.get("gracePeriodSeconds") is not None:
            grace = int(body["gracePeriodSeconds"])
        preconditions = body.get("preconditions") if isinstance(body, dict) else None
        return _json(cluster.delete_pod(namespace, name, grace, preconditions))
    return _json(cluster.store.require("Pod", namespace, name).raw)


async def node(request: Request, cluster: VirtualCluster) -> Response:
    name = request.path_params["name"]
    if request.method == "PATCH":
        content_type = request.headers.get("content-type", "application/strategic-merge-patch+json")
        return _json(cluster.patch_node(name, content_type, await _body(request)))
    return _json(cluster.store.require("Node", "", name).raw)


# --- logs -------------------------------------------------------------------------------------


def _since(request: Request) -> float | None:
    seconds = _int(request, "sinceSeconds")
    if seconds is not None:
        if seconds < 1:
            raise ApiError(
                422, "Invalid", 'PodLogOptions "" is invalid: sinceSeconds: Invalid value: must be greater than 0'
            )
        return time.time() - seconds
    since_time = request.query_params.get("sinceTime")
    if since_time:
        try:
            return datetime.fromisoformat(since_time.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise bad_request(f"invalid sinceTime {since_time!r}") from None
    return None


async def _follow(
    log: ContainerLog, since: float | None, tail: int | None, timestamps: bool, limit: int | None
) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # loop closed: the server is gone
            loop.call_soon_threadsafe(woken.set)

    log.subscribe(wake)
    sent = 0
    try:
        body, position, closed = log.read(None, since, tail, timestamps)
        while True:
            if body:
                if limit is not None:
                    body = body[: max(limit - sent, 0)]
                sent += len(body)
                yield body
                if limit is not None and sent >= limit:
                    return
            if closed:
                return
            await woken.wait()
            woken.clear()
            body, position, closed = log.read(position, timestamps=timestamps)
    finally:
        log.unsubscribe(wake)


async def pod_log(request: Request, cluster: VirtualCluster) -> Response:
    namespace, name = request.path_params["namespace"], request.path_params["name"]
    log = cluster.pod_log(namespace, name, request.query_params.get("container"))
    if log is None:
        return Response(b"", media_type="text/plain")
    since, tail = _since(request), _int(request, "tailLines")
    timestamps, limit = _flag(request, "timestamps"), _int(request, "limitBytes")
    if _flag(request, "previous"):
        raise bad_request(
            f'previous terminated container "{request.query_params.get("container") or ""}" in pod "{name}" not found'
        )
    if _flag(request, "follow"):
        return StreamingResponse(_follow(log, since, tail, timestamps, limit), media_type="text/plain")
    body, _, _ = log.read(None, since, tail, timestamps)
    return Response(body[:limit] if limit is not None else body, media_type="text/plain")


# --- admin --------------------------------------------------------------------------------------


async def admin_summary(request: Request, cluster: VirtualCluster) -> Response:
    return _json(cluster.summary())


async def admin_faults(request: Request, cluster: VirtualCluster) -> Response:
    if request.method == "DELETE":
        cluster.faults.clear()
    elif request.method in ("PUT", "PATCH", "POST"):
        body = await _body(request) or {}
        if not isinstance(body, dict):
            raise bad_request("send a JSON object of faults")
        refuse = body.pop("refuse_seconds", None)
        cluster.faults.update(**body)
        if refuse is not None:
            if float(refuse) <= 0:
                raise bad_request("refuse_seconds must be > 0 over HTTP: nothing could switch it off again")
            # after this answer is sent, so the caller learns it worked
            asyncio.get_running_loop().call_later(0.05, cluster.faults.refuse, float(refuse))
    return _json({**cluster.faults.faults.to_dict(), "refusing": cluster.faults.refusing})


async def admin_node_ready(request: Request, cluster: VirtualCluster) -> Response:
    body = await _body(request) or {}
    name = request.path_params["name"]
    cluster.store.require("Node", "", name)
    cluster.set_node_ready(name, bool(body.get("ready", True)), body.get("running_pods", "fail"))
    return _json(cluster.store.require("Node", "", name).raw)


async def admin_node_cordon(request: Request, cluster: VirtualCluster) -> Response:
    body = await _body(request) or {}
    name = request.path_params["name"]
    cluster.store.require("Node", "", name)
    cluster.cordon(name, bool(body.get("cordoned", True)))
    return _json(cluster.store.require("Node", "", name).raw)


async def not_found_route(request: Request, cluster: VirtualCluster) -> Response:
    return _error(ApiError(404, "NotFound", "the server could not find the requested resource", {}))


def _trailing_slash_insensitive(app: Starlette) -> Callable[..., Awaitable[None]]:
    """The apiserver answers `/api/` like `/api` (the generated client asks for `/api/v1/`)."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if len(path) > 1 and path.endswith("/"):
            scope = {**scope, "path": path.rstrip("/") or "/"}
        await app(scope, receive, send)

    return asgi


def build_app(cluster: VirtualCluster) -> Callable[..., Awaitable[None]]:
    def r(path: str, fn: Endpoint, methods: list[str] | None = None, admin: bool = False) -> Route:
        return Route(path, _handler(fn, cluster, admin), methods=methods or ["GET"])

    ns = "/api/v1/namespaces/{namespace}"
    routes = [
        Route("/version", version),
        Route("/healthz", healthz),
        Route("/livez", healthz),
        Route("/readyz", healthz),
        r("/api", api_versions),
        r("/apis", api_group_list),
        r("/api/v1", api_resources),
        r("/api/v1/namespaces", namespaces, ["GET", "POST"]),
        r(ns, namespace),
        r("/api/v1/nodes", _collection("Node", namespaced=False)),
        r("/api/v1/nodes/{name}", node, ["GET", "PATCH"]),
        r("/api/v1/nodes/{name}/status", node),
        r("/api/v1/pods", _collection("Pod", namespaced=False)),
        r("/api/v1/events", _collection("Event", namespaced=False)),
        r(f"{ns}/pods", pods, ["GET", "POST", "DELETE"]),
        r(f"{ns}/pods/{{name}}", pod, ["GET", "PATCH", "PUT", "DELETE"]),
        r(f"{ns}/pods/{{name}}/status", _get("Pod")),
        r(f"{ns}/pods/{{name}}/log", pod_log),
        r(f"{ns}/events", _collection("Event")),
        r(f"{ns}/events/{{name}}", _get("Event")),
        r("/_virtual/summary", admin_summary, admin=True),
        r("/_virtual/faults", admin_faults, ["GET", "PUT", "PATCH", "POST", "DELETE"], admin=True),
        r("/_virtual/nodes/{name}/ready", admin_node_ready, ["POST"], admin=True),
        r("/_virtual/nodes/{name}/cordon", admin_node_cordon, ["POST"], admin=True),
        r("/{path:path}", not_found_route, ["GET", "POST", "PUT", "PATCH", "DELETE"]),
    ]
    return _trailing_slash_insensitive(Starlette(routes=routes))
