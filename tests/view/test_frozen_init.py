"""`quick_init` makes the same instances as a frozen dataclass's own `__init__`, and they stay frozen."""

from __future__ import annotations

import dataclasses
from dataclasses import InitVar, dataclass, field

import pytest

from airflow_mcsched.view.frozen_init import quick_init


def _pair(**fields_):
    """The same class twice, once with the generated `__init__` and once with `quick_init`'s."""

    def make():
        @dataclass(frozen=True, slots=True)
        class Grant:
            name: str
            gpus: int = 0
            pods: tuple[str, ...] = ()
            total: float = field(init=False, repr=False, compare=False)
            note: str = field(init=False, default="none")

            def __post_init__(self) -> None:
                object.__setattr__(self, "total", self.gpus * 2.5)

        return Grant

    return make(), quick_init(make())


@pytest.mark.parametrize(
    "args, kwargs",
    [(("a",), {}), (("a", 3), {}), (("a",), {"pods": ("p",)}), ((), {"name": "b", "gpus": 8, "pods": ("x", "y")})],
)
def test_same_instances_as_the_generated_init(args, kwargs):
    plain, quick = _pair()
    a, b = plain(*args, **kwargs), quick(*args, **kwargs)
    assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert repr(a).replace(plain.__qualname__, "X") == repr(b).replace(quick.__qualname__, "X")
    assert b.total == a.total and b.note == "none"
    assert b == quick(*args, **kwargs) and hash(b) == hash(quick(*args, **kwargs))
    assert dataclasses.replace(b, gpus=5).total == 12.5  # replace calls the new __init__


def test_instances_stay_frozen_and_arguments_are_checked():
    _, quick = _pair()
    grant = quick("a", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        grant.gpus = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="name"):
        quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword"):
        quick("a", total=3.0)  # type: ignore[call-arg]


def test_refuses_a_class_it_would_get_wrong():
    @dataclass(slots=True)
    class Mutable:
        name: str

    @dataclass(frozen=True, slots=True)
    class WithFactory:
        pods: list = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        gpus: int
        scale: InitVar[int] = 1

    with pytest.raises(TypeError, match="frozen=True, slots=True"):
        quick_init(Mutable)
    with pytest.raises(TypeError, match="scale"):
        quick_init(WithInitVar)
    with pytest.raises(TypeError, match="default_factory"):
        quick_init(WithFactory)
