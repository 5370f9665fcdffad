"""Label and field selectors as the apiserver parses them (`a=b,!c,d in (x,y)`, `status.phase!=Failed`).

A parse failure raises `ApiError` 400, which is what list and watch calls return on a bad selector.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_mcsched.virtual import names
from airflow_mcsched.virtual.errors import ApiError, bad_request


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists, !, =, !=, in, notin, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            number = int(value or "")
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == "gt" else number < bound


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            break
        tokens.append(match.group(1))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


def _fail(text: str, why: str) -> ApiError:
    return bad_request(f"unable to parse requirement: {why} (selector {text!r})")


def _check_key(key: str, text: str) -> str:
    problems = names.qualified_name(key)
    if problems:
        raise _fail(text, f"invalid label key {key!r}: {problems[0]}")
    return key


def _check_value(value: str, text: str) -> str:
    problems = names.label_value(value)
    if problems:
        raise _fail(text, f"invalid label value: {value!r}: {problems[0]}")
    return value


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the `labelSelector` query parameter (empty or None selects everything)."""
    if not text or not text.strip():
        return LabelSelector()
    tokens = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(tokens):
            raise _fail(text, "unexpected end of selector")
        i += 1
        return tokens[i - 1]

    while i < len(tokens):
        tok = take()
        if tok == "!":
            reqs.append(Requirement(_check_key(take(), text), "!"))
        else:
            key = _check_key(tok, text)
            nxt = tokens[i] if i < len(tokens) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                i += 1
                value = tokens[i] if i < len(tokens) and tokens[i] != "," else ""
                if value:
                    i += 1
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", (_check_value(value, text),)))
            elif nxt in (">", "<"):
                i += 1
                value = take()
                if not value.lstrip("-").isdigit():
                    raise _fail(text, f"for 'Gt', 'Lt' operators, the value must be an integer, got {value!r}")
                reqs.append(Requirement(key, "gt" if nxt == ">" else "lt", (value,)))
            elif nxt in ("in", "notin"):
                i += 1
                if take() != "(":
                    raise _fail(text, "found '" + tokens[i - 1] + "', expected: '('")
                values: list[str] = []
                while True:
                    tok = take()
                    if tok == ")":
                        break
                    if tok == ",":
                        continue
                    values.append(_check_value(tok, text))
                reqs.append(Requirement(key, nxt, tuple(values)))
            else:
                raise _fail(text, f"found '{nxt}', expected: '=', '!=', '==', 'in', notin'")
        if i < len(tokens):
            if tokens[i] != ",":
                raise _fail(text, f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
            if i >= len(tokens):
                raise _fail(text, "found 'end of string', expected: identifier")
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()  # (field, equal?, value)

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(f, "") == v) == eq for f, eq, v in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, escaped = [], [], False
    for ch in text:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\":
            cur.append(ch)
            escaped = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None, supported: frozenset[str]) -> FieldSelector:
    """Parse `fieldSelector`; fields outside `supported` are refused as the apiserver does."""
    if not text or not text.strip():
        return FieldSelector()
    terms = []
    for part in _split_unescaped(text, ","):
        part = part.strip()
        if not part:
            continue
        match = re.match(r"^([^=!]+)(==|=|!=)(.*)$", part)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = match.group(1).strip(), match.group(2), _unescape(match.group(3))
        if field not in supported:
            raise bad_request(f"field label not supported: {field}")
        terms.append((field, op != "!=", value))
    return FieldSelector(tuple(terms))


def _get(obj: Mapping[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


# Field selectors each kind supports, as in the apiserver's per-resource field label conversion.
FIELDS_OF_KIND: dict[str, frozenset[str]] = {
    "Pod": frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "Event": frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    "Node": frozenset({"metadata.name", "spec.unschedulable"}),
    "Namespace": frozenset({"metadata.name", "status.phase"}),
}


def field_values(kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """The selectable fields of an object, for `FieldSelector.matches`."""
    values = {f: _get(obj, f) for f in FIELDS_OF_KIND.get(kind, ())}
    if kind == "Pod" and not values["spec.hostNetwork"]:
        values["spec.hostNetwork"] = "false"
    if kind == "Node" and not values["spec.unschedulable"]:
        values["spec.unschedulable"] = "false"
    if kind == "Event":
        values["source"] = _get(obj, "reportingComponent") or _get(obj, "source.component")
    return values
