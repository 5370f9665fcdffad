"""Kubernetes resource quantities (`100m`, `1Gi`, `2`, `1e3`), parsed exactly as the apiserver does.

Values are kept as `Fraction` so that `0.5` CPU and `500m` compare equal and nothing is lost
to floating point; the scheduler works in milli-CPU and bytes (`cpu_milli`, `to_int_ceil`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

# The apiserver's own pattern; its error message quotes it, so ours does too.
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)$")
_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_EXPONENT = re.compile(r"^[eE][+-]?\d+$")


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity; the message is the apiserver's."""

    def __init__(self, text: object) -> None:
        self.text = text
        super().__init__(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")


def parse_quantity(text: object) -> Fraction:
    """Parse `text` (a str, or a JSON number as the apiserver also accepts) into an exact value."""
    if isinstance(text, bool):
        raise QuantityError(text)
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(text)
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(text)
    value = text.strip()
    match = re.match(QUANTITY_PATTERN, value)
    if not match:
        raise QuantityError(text)
    number, suffix = match.groups()
    if not _NUMBER.match(number):
        raise QuantityError(text)
    if suffix in _SUFFIXES:
        return Fraction(number) * _SUFFIXES[suffix]
    if _EXPONENT.match(suffix):
        return Fraction(number) * Fraction(10) ** int(suffix[1:])
    raise QuantityError(text)


def cpu_milli(value: Fraction) -> int:
    """CPU in thousandths of a core, rounded up as Kubernetes rounds sub-milli requests."""
    return math.ceil(value * 1000)


def to_int_ceil(value: Fraction) -> int:
    return math.ceil(value)


def format_cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(count: int) -> str:
    """Bytes in the largest binary unit that divides them, like kubelet reports memory."""
    for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if count and count % factor == 0:
            return f"{count // factor}{suffix}"
    return str(count)
