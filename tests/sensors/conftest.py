from tests.operators.placement_fleet import placement_fleet  # noqa: F401
