"""What the apiserver checks before storing an object: decoding (400) and validation (422).

`decode_pod` refuses bodies a Go client could not unmarshal (wrong types, unparsable quantities)
with 400 BadRequest, as the apiserver does; `validate_pod` collects every field error of a
decodable pod, and the caller answers 422 Invalid with one `details.causes` entry per error.
"""

from __future__ import annotations

import re
from typing import Any

from airflow_mcsched.virtual import names
from airflow_mcsched.virtual.errors import (
    ApiError,
    FieldError,
    bad_request,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from airflow_mcsched.virtual.quantities import QuantityError, parse_quantity
from airflow_mcsched.virtual.vocabulary import (
    ANNOTATION_DURATION,
    ANNOTATION_EXIT_CODE,
    ANNOTATION_GPU_MILLI,
    ANNOTATION_RUNTIME,
    MILLI_PER_GPU,
    RUNTIMES,
)

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
NODE_SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
STANDARD_RESOURCES = {"cpu", "memory", "ephemeral-storage", "storage", "pods"}
# Resources the scheduler may overcommit; all others (GPUs, ...) need request == limit.
OVERCOMMITTABLE = {"cpu", "memory", "ephemeral-storage"}
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_DECIMAL = re.compile(r"^-?\d+(\.\d+)?$")


def _decode_error(kind: str, why: str) -> ApiError:
    return bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {why}')


def _expect(value: Any, kind_of: type | tuple[type, ...], kind: str, where: str) -> None:
    if value is not None and not isinstance(value, kind_of):
        go_type = {dict: "map", list: "array", str: "string", int: "integer", bool: "bool"}
        wanted = go_type.get(kind_of if isinstance(kind_of, type) else kind_of[0], "value")
        got = type(value).__name__
        raise _decode_error(kind, f"json: cannot unmarshal {got} into Go struct field {where} of type {wanted}")


def decode_object(body: Any, kind: str) -> dict[str, Any]:
    """Structural checks shared by every kind: a JSON object with the right kind/apiVersion."""
    if not isinstance(body, dict):
        raise _decode_error(kind, "json: cannot unmarshal into Go value of type struct")
    if body.get("kind") not in (None, kind):
        raise bad_request(
            f"the API version in the data (v1) does not match the expected kind ({body.get('kind')} != {kind})"
        )
    if body.get("apiVersion") not in (None, "v1"):
        raise bad_request(
            f"the API version in the data ({body.get('apiVersion')}) does not match the expected API version (v1)"
        )
    meta = body.get("metadata") or {}
    _expect(meta, dict, kind, "metadata")
    for field in ("labels", "annotations"):
        _expect(meta.get(field), dict, kind, f"ObjectMeta.metadata.{field}")
        for value in (meta.get(field) or {}).values():
            _expect(value, str, kind, f"ObjectMeta.metadata.{field}")
    for field in ("name", "generateName", "namespace"):
        _expect(meta.get(field), str, kind, f"ObjectMeta.metadata.{field}")
    return body


def decode_pod(body: Any) -> dict[str, Any]:
    """Pod-specific decoding: container lists and resource quantities must parse."""
    pod = decode_object(body, "Pod")
    spec = pod.get("spec")
    _expect(spec, dict, "Pod", "Pod.spec")
    for list_field in ("containers", "initContainers"):
        containers = (spec or {}).get(list_field)
        _expect(containers, list, "Pod", f"PodSpec.spec.{list_field}")
        for container in containers or []:
            _expect(container, dict, "Pod", f"PodSpec.spec.{list_field}")
            for part in ("command", "args", "env"):
                _expect(container.get(part), list, "Pod", f"Container.spec.{list_field}.{part}")
            resources = container.get("resources") or {}
            _expect(resources, dict, "Pod", f"Container.spec.{list_field}.resources")
            for part in ("requests", "limits"):
                amounts = resources.get(part) or {}
                _expect(amounts, dict, "Pod", f"ResourceRequirements.spec.{list_field}.resources.{part}")
                for value in amounts.values():
                    try:
                        parse_quantity(value)
                    except QuantityError as err:
                        raise _decode_error("Pod", str(err)) from None
    _expect((spec or {}).get("nodeSelector"), dict, "Pod", "PodSpec.spec.nodeSelector")
    _expect((spec or {}).get("tolerations"), list, "Pod", "PodSpec.spec.tolerations")
    return pod


def validate_metadata(meta: dict[str, Any], namespaced: bool, name_check=names.dns1123_subdomain) -> list[FieldError]:
    errors: list[FieldError] = []
    name = meta.get("name")
    if not name:
        errors.append(required("metadata.name", "name or generateName is required"))
    else:
        errors.extend(invalid("metadata.name", name, d) for d in name_check(name))
    if namespaced and meta.get("namespace"):
        errors.extend(
            invalid("metadata.namespace", meta["namespace"], d) for d in names.dns1123_label(meta["namespace"])
        )
    errors.extend(validate_labels(meta.get("labels") or {}, "metadata.labels"))
    errors.extend(validate_annotations(meta.get("annotations") or {}))
    return errors


def validate_labels(labels: dict[str, str], field_path: str) -> list[FieldError]:
    errors = []
    for key, value in labels.items():
        errors.extend(invalid(field_path, key, d) for d in names.qualified_name(key))
        errors.extend(invalid(field_path, value, d) for d in names.label_value(value))
    return errors


def validate_annotations(annotations: dict[str, str]) -> list[FieldError]:
    errors = []
    total = 0
    for key, value in annotations.items():
        errors.extend(invalid("metadata.annotations", key, d) for d in names.qualified_name(key.lower()))
        total += len(key) + len(value)
    if total > names.ANNOTATIONS_TOTAL_MAX:
        errors.append(
            FieldError(
                "metadata.annotations", "FieldValueTooLong", f"must have at most {names.ANNOTATIONS_TOTAL_MAX} bytes"
            )
        )
    errors.extend(_validate_mcsched_annotations(annotations))
    return errors


def _validate_mcsched_annotations(annotations: dict[str, str]) -> list[FieldError]:
    """Our own annotations: a real cluster would ignore bad values, we refuse them to catch mistakes."""
    errors = []

    def where(key: str) -> str:
        return f"metadata.annotations[{key}]"

    if ANNOTATION_RUNTIME in annotations and annotations[ANNOTATION_RUNTIME] not in RUNTIMES:
        errors.append(not_supported(where(ANNOTATION_RUNTIME), annotations[ANNOTATION_RUNTIME], list(RUNTIMES)))
    if ANNOTATION_DURATION in annotations:
        value = annotations[ANNOTATION_DURATION]
        if not _DECIMAL.match(value) or float(value) < 0:
            errors.append(invalid(where(ANNOTATION_DURATION), value, "must be a number of seconds >= 0"))
    if ANNOTATION_EXIT_CODE in annotations:
        value = annotations[ANNOTATION_EXIT_CODE]
        if not value.isdigit() or int(value) > 255:
            errors.append(invalid(where(ANNOTATION_EXIT_CODE), value, "must be an integer from 0 to 255"))
    if ANNOTATION_GPU_MILLI in annotations:
        value = annotations[ANNOTATION_GPU_MILLI]
        if not value.isdigit() or not 1 <= int(value) <= MILLI_PER_GPU:
            errors.append(invalid(where(ANNOTATION_GPU_MILLI), value, f"must be an integer from 1 to {MILLI_PER_GPU}"))
    return errors


def _resource_name_errors(name: str, field_path: str) -> list[FieldError]:
    if name in STANDARD_RESOURCES or name.startswith("hugepages-"):
        return []
    if "/" not in name:
        return [invalid(field_path, name, "must be a standard resource type or fully qualified")]
    return [invalid(field_path, name, d) for d in names.qualified_name(name)]


def validate_resources(resources: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    for part, amounts in (("limits", limits), ("requests", requests)):
        for name, text in amounts.items():
            where = f"{path}.{part}[{name}]"
            errors.extend(_resource_name_errors(name, where))
            value = parse_quantity(text)
            if value < 0:
                errors.append(invalid(where, str(text), "must be greater than or equal to 0"))
            elif name not in OVERCOMMITTABLE and not name.startswith("hugepages-") and value.denominator != 1:
                errors.append(invalid(where, str(text), "must be an integer"))
    for name, text in requests.items():
        where = f"{path}.requests"
        if name in limits and name in OVERCOMMITTABLE and parse_quantity(text) > parse_quantity(limits[name]):
            errors.append(invalid(where, str(text), f"must be less than or equal to {name} limit of {limits[name]}"))
        if name not in OVERCOMMITTABLE and "/" in name:
            if name not in limits:
                errors.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
            elif parse_quantity(text) != parse_quantity(limits[name]):
                errors.append(invalid(where, str(text), f"must be equal to {name} limit of {limits[name]}"))
    return errors


def _validate_container(container: dict[str, Any], path: str, seen: set[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    name = container.get("name")
    if not name:
        errors.append(required(f"{path}.name"))
    else:
        errors.extend(invalid(f"{path}.name", name, d) for d in names.dns1123_label(name))
        if name in seen:
            errors.append(duplicate(f"{path}.name", name))
        seen.add(name)
    if not container.get("image"):
        errors.append(required(f"{path}.image"))
    for i, env in enumerate(container.get("env") or []):
        env_name = env.get("name") if isinstance(env, dict) else None
        if not env_name:
            errors.append(required(f"{path}.env[{i}].name"))
        elif not _ENV_NAME.match(env_name):
            errors.append(
                invalid(
                    f"{path}.env[{i}].name",
                    env_name,
                    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
                    "or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
                    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
                )
            )
    errors.extend(validate_resources(container.get("resources") or {}, f"{path}.resources"))
    return errors


def _validate_affinity(affinity: dict[str, Any]) -> list[FieldError]:
    node_affinity = affinity.get("nodeAffinity") or {}
    required_terms = (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or []
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    errors = [e for t, term in enumerate(required_terms) for e in _term_errors(term, f"{base}[{t}]")]
    base = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for p, preferred in enumerate(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        weight = preferred.get("weight")
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            errors.append(invalid(f"{base}[{p}].weight", weight, "must be in the range 1-100"))
        errors.extend(_term_errors(preferred.get("preference") or {}, f"{base}[{p}].preference"))
    return errors


def _term_errors(term: dict[str, Any], base: str) -> list[FieldError]:
    """A node selector term's expressions, as the API server checks them."""
    errors = []
    for e, expr in enumerate(term.get("matchExpressions") or []):
        where = f"{base}.matchExpressions[{e}]"
        op = expr.get("operator")
        if op not in NODE_SELECTOR_OPERATORS:
            errors.append(not_supported(f"{where}.operator", op, NODE_SELECTOR_OPERATORS))
            continue
        values = expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            errors.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        if op in ("Exists", "DoesNotExist") and values:
            errors.append(
                forbidden(f"{where}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
        if op in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
            errors.append(required(f"{where}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
        errors.extend(invalid(f"{where}.key", expr.get("key"), d) for d in names.qualified_name(expr.get("key") or ""))
    for f, field in enumerate(term.get("matchFields") or []):
        where = f"{base}.matchFields[{f}]"
        if field.get("key") != "metadata.name":
            errors.append(not_supported(f"{where}.key", field.get("key"), ["metadata.name"]))
        if field.get("operator") not in ("In", "NotIn"):
            errors.append(not_supported(f"{where}.operator", field.get("operator"), ["In", "NotIn"]))
        elif len(field.get("values") or []) != 1:
            errors.append(
                required(
                    f"{where}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    return errors


def _validate_tolerations(tolerations: list[Any]) -> list[FieldError]:
    errors = []
    for i, tol in enumerate(tolerations):
        where = f"spec.tolerations[{i}]"
        op = tol.get("operator") or "Equal"
        if op not in TOLERATION_OPERATORS:
            errors.append(not_supported(f"{where}.operator", op, TOLERATION_OPERATORS))
        if op == "Exists" and tol.get("value"):
            errors.append(
                invalid(f"{where}.operator", tol.get("value"), "value must be empty when `operator` is 'Exists'")
            )
        if not tol.get("key") and op != "Exists":
            errors.append(
                invalid(
                    f"{where}.operator",
                    op,
                    'operator must be Exists when `key` is empty, which means "match all values and all keys"',
                )
            )
        effect = tol.get("effect")
        if effect and effect not in TAINT_EFFECTS:
            errors.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))
    return errors


def validate_pod(pod: dict[str, Any]) -> list[FieldError]:
    """Every field error of a decoded pod (after defaults); empty when the pod may be stored."""
    errors = validate_metadata(pod.get("metadata") or {}, namespaced=True)
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        errors.append(required("spec.containers"))
    seen: set[str] = set()
    for i, container in enumerate(containers):
        errors.extend(_validate_container(container, f"spec.containers[{i}]", seen))
    for i, container in enumerate(spec.get("initContainers") or []):
        errors.extend(_validate_container(container, f"spec.initContainers[{i}]", seen))
    policy = spec.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        errors.append(not_supported("spec.restartPolicy", policy, RESTART_POLICIES))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < 0):
        errors.append(invalid("spec.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"))
    errors.extend(validate_labels(spec.get("nodeSelector") or {}, "spec.nodeSelector"))
    errors.extend(_validate_affinity(spec.get("affinity") or {}))
    errors.extend(_validate_tolerations(spec.get("tolerations") or []))
    if spec.get("nodeName"):
        errors.extend(invalid("spec.nodeName", spec["nodeName"], d) for d in names.dns1123_subdomain(spec["nodeName"]))
    return errors


# What may change on an existing pod; the message is the apiserver's.
POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def validate_pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errors = validate_metadata(new.get("metadata") or {}, namespaced=True)
    for field in ("name", "namespace", "uid", "creationTimestamp"):
        if (new.get("metadata") or {}).get(field) != old["metadata"].get(field):
            errors.append(invalid(f"metadata.{field}", (new.get("metadata") or {}).get(field), "field is immutable"))

    def comparable(spec: dict[str, Any]) -> dict[str, Any]:
        spec = dict(spec)
        spec.pop("activeDeadlineSeconds", None)
        spec.pop("tolerations", None)
        for list_field in ("containers", "initContainers"):
            if list_field in spec:
                spec[list_field] = [{k: v for k, v in c.items() if k != "image"} for c in spec[list_field]]
        return spec

    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if comparable(new_spec) != comparable(old_spec):
        errors.append(forbidden("spec", POD_UPDATE_FORBIDDEN))
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if any(t not in new_tolerations for t in old_tolerations):
        errors.append(
            forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")
        )
    return errors


def validate_namespace(ns: dict[str, Any]) -> list[FieldError]:
    return validate_metadata(ns.get("metadata") or {}, namespaced=False, name_check=names.dns1123_label)
