"""The three PATCH flavours the apiserver accepts for core objects.

JSON merge patch (RFC 7386), strategic merge patch (merge patch plus list merging by key for the
lists that have one, and `$patch: delete|replace` directives) and JSON patch (RFC 6902). What
the result may change is checked afterwards by the kind's update validation.
"""

from __future__ import annotations

import copy
from typing import Any

from airflow_mcsched.virtual.errors import ApiError, bad_request, unsupported_media_type

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# Lists merged element-wise by a key in strategic merge patch (Kubernetes' patchMergeKey tags).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "conditions": "type",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "hostAliases": "ip",
}


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, list_key: str | None = None) -> Any:
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
        result = dict(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
                continue
            if value is None:
                result.pop(key, None)
            elif isinstance(value, list) and key in MERGE_KEYS and isinstance(result.get(key), list):
                result[key] = _merge_list(result[key], value, MERGE_KEYS[key])
            else:
                result[key] = strategic_merge_patch(result.get(key), value)
        return result
    return copy.deepcopy(patch)


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    merged = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            merged.append(copy.deepcopy(item))
            continue
        index = next((i for i, x in enumerate(merged) if isinstance(x, dict) and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            merged[index] = strategic_merge_patch(merged[index], item)
    return merged


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise ApiError(422, "Invalid", f"testing value {op['path']} failed")
                continue
            if kind in ("move", "copy"):
                from_parts = _pointer(op["from"])
                value = copy.deepcopy(_walk(doc, from_parts))
                if kind == "move":
                    doc = _apply(doc, from_parts, "remove", None)
                doc = _apply(doc, parts, "add", value)
                continue
            doc = _apply(doc, parts, kind, copy.deepcopy(op.get("value")))
        except (KeyError, IndexError, ValueError, TypeError) as err:
            raise ApiError(
                422, "Invalid", f"the server rejected our request due to an error in our request: {err}"
            ) from None
    return doc


def _apply(doc: Any, parts: list[str], kind: str, value: Any) -> Any:
    if not parts:
        if kind in ("add", "replace"):
            return value
        raise ValueError("cannot remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if kind == "add":
            parent.insert(index, value)
        elif kind == "remove":
            parent.pop(index)
        elif kind == "replace":
            parent[index] = value
        else:
            raise ValueError(f"unknown op {kind!r}")
    else:
        if kind == "add":
            parent[last] = value
        elif kind == "remove":
            del parent[last]
        elif kind == "replace":
            if last not in parent:
                raise KeyError(last)
            parent[last] = value
        else:
            raise ValueError(f"unknown op {kind!r}")
    return doc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    kind = content_type.split(";")[0].strip().lower()
    if kind == MERGE:
        result = merge_patch(target, patch)
    elif kind == STRATEGIC:
        result = strategic_merge_patch(target, patch)
    elif kind == JSON_PATCH:
        result = json_patch(target, patch)
    else:
        raise unsupported_media_type(content_type)
    if not isinstance(result, dict):
        raise bad_request("the patch did not produce an object")
    return result
