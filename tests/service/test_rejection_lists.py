"""Lists of rejections are kept once, under their digest, for every placement whose explanation
gives them: shared by requests alike, dropped when no placement names them, and read back into
the API's explanation; rows decided before they were kept apart still read their own."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.schemas import PlacementState
from airflow_mcsched.service.stored_explanations import with_rejections
from airflow_mcsched.service.tables import PlacementRow, RejectionListRow
from tests.service.test_placement_store import POLICY, db, now, place, submit  # noqa: F401  (db is a fixture)

H100 = "NVIDIA-H100-80GB-HBM3"


def _lists(db) -> tuple[dict[str, str | None], set[str]]:  # noqa: F811
    """(digest each placement names, by id; digests held) after asserting neither leaks nor dangles."""
    with db() as s:
        named = dict(s.execute(select(PlacementRow.id, PlacementRow.rejections_digest)).tuples().all())
        held = set(s.scalars(select(RejectionListRow.digest)))
    assert held == set(named.values()) - {None}, "every list held is named, and every list named is held"
    return named, held


def _release_and_cycle(db, placement_id: str) -> None:  # noqa: F811
    with db() as s:
        store = PlacementStore(s, POLICY)
        store.release(placement_id, "succeeded", "", now(), "test")
        store.run_cycle(now())


def test_requests_alike_share_one_list_which_goes_when_no_placement_names_it(db):  # noqa: F811
    a, b, c = (place(db, submit(t, gpus=8, gpu_types=[H100])) for t in "abc")
    assert (a.state, b.state, c.state) == (PlacementState.ADMITTED, PlacementState.PENDING, PlacementState.PENDING)
    named, held = _lists(db)
    assert named[b.id] == named[c.id] != named[a.id]  # the waiting two share theirs
    assert len(held) == 2
    waiting_list = named[b.id]
    assert any(r.cluster == "cloud-h100" and r.reason == "InsufficientFreeGpus" for r in c.explanation.rejections)

    _release_and_cycle(db, a.id)  # b is admitted; c still waits, for the same reasons
    named, _ = _lists(db)
    assert named[c.id] == waiting_list != named[b.id]

    _release_and_cycle(db, b.id)  # c is admitted: nobody names the waiting list any more
    named, held = _lists(db)
    assert waiting_list not in held
    with db() as s:
        out = PlacementStore(s, POLICY).out(s.get(PlacementRow, c.id))
    assert out.state is PlacementState.ADMITTED
    assert out.explanation.rejections and all(r.pool != "h100-spot" for r in out.explanation.rejections)


def test_a_row_with_its_rejections_inline_reads_them_and_keeps_them_apart_once_decided_again(db):  # noqa: F811
    place(db, submit("a", gpus=8, gpu_types=[H100]))
    waiting = place(db, submit("b", gpus=8, gpu_types=[H100]))
    with db() as s:  # as a row decided before revision 0005 was stored
        row = s.get(PlacementRow, waiting.id)
        listed = s.get(RejectionListRow, row.rejections_digest)
        row.explanation = with_rejections(row.explanation, listed.rejections)
        row.rejections_digest = None
        s.delete(listed)
        s.commit()
    with db() as s:
        store = PlacementStore(s, POLICY)
        old = store.out(s.get(PlacementRow, waiting.id))
        assert old.explanation == waiting.explanation
        store.run_cycle(now())
        row = s.get(PlacementRow, waiting.id)
        assert row.rejections_digest is not None and "rejections" not in row.explanation
        assert store.out(row).explanation.rejections == waiting.explanation.rejections
        s.commit()
    _lists(db)


def test_a_reader_whose_list_a_cycle_replaced_and_dropped_reads_the_row_again(db, request):  # noqa: F811
    """PostgreSQL (read committed): a reader holds a waiting row; before it reads the row's list, a
    cycle admits the placement, names another list and drops the old one. The reader reads the row
    again and answers with what it is now, not with a missing list."""
    if "sqlite" in request.node.name:
        pytest.skip("SQLite has one writer: the cycle would wait for the reader's transaction to end")
    place(db, submit("a", gpus=8, gpu_types=[H100]))
    waiting = place(db, submit("b", gpus=8, gpu_types=[H100]))
    with db() as reader:
        row = reader.get(PlacementRow, waiting.id)
        old = row.rejections_digest
        a = reader.scalar(select(PlacementRow.id).where(PlacementRow.task_id == "a"))
        _release_and_cycle(db, a)  # another session: b is admitted, its old list dropped
        _, held = _lists(db)
        assert old not in held
        out = PlacementStore(reader, POLICY).out(row)
    assert out.state is PlacementState.ADMITTED
    assert row.rejections_digest != old and all(r.pool != "h100-spot" for r in out.explanation.rejections)
