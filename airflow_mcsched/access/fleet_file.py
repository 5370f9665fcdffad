"""Read fleet files (YAML) into profiles, with errors that name the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from airflow_mcsched.access.profiles import FleetSpec


class FleetFileError(ValueError):
    """A fleet file that cannot be used; the message lists every problem, one per line."""

    def __init__(self, path: str | Path, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(f"{path}: invalid fleet file\n" + "\n".join(f"  - {p}" for p in problems))


def _field_path(loc: tuple, data: object) -> str:
    """Turn a pydantic location into a readable path, naming list items by their `name`."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int) and isinstance(node, list) and item < len(node):
            node = node[item]
            name = node.get("name") if isinstance(node, dict) else None
            parts[-1] = f"{parts[-1]}[{name!r}]" if name and parts else f"{parts[-1] if parts else ''}[{item}]"
        else:
            parts.append(str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts) or "(top level)"


def describe_validation_error(err: ValidationError, data: object) -> list[str]:
    problems = []
    for e in err.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field; remove it or check its spelling against docs/fleet-file.md"
        elif e["type"] == "missing":
            msg = "required field is missing; add it"
        problems.append(f"{_field_path(tuple(e['loc']), data)}: {msg}")
    return problems


def parse_fleet(data: object, source: str | Path = "<fleet>") -> FleetSpec:
    if not isinstance(data, dict):
        raise FleetFileError(source, ["top level must be a mapping with a 'clusters:' list"])
    try:
        return FleetSpec.model_validate(data)
    except ValidationError as err:
        raise FleetFileError(source, describe_validation_error(err, data)) from None


def load_fleet_file(path: str | Path) -> FleetSpec:
    """Load and validate a whole fleet file; nothing partial is ever returned."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise FleetFileError(p, [f"cannot read the file: {err.strerror}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise FleetFileError(p, [f"{where}not valid YAML ({getattr(err, 'problem', err)})"]) from None
    return parse_fleet(data, p)
