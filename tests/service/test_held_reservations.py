"""The engine's reservations of the active rows: read as plain rows, kept while a row reads the same."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from sqlalchemy import select, update

from airflow_mcsched.service.held_reservations import KeptReservations, locked_active_rows
from airflow_mcsched.service.placement_mapping import reservation_of
from airflow_mcsched.service.tables import ReservationRow
from tests.service.test_placement_store import POLICY, now, place, submit
from tests.service.test_placement_store import db as db  # the fixture: the example fleet, read


def test_a_rows_reservation_is_the_one_the_orm_row_makes_and_is_kept_while_the_row_reads_the_same(db):
    t0 = now()
    held = [place(db, submit(f"t{i}", gpus=g, gpu_types=[]), when=t0) for i, g in enumerate((8, 1, 2))]
    kept = KeptReservations()
    with db() as s:
        rows = locked_active_rows(s)
        first = kept.reservations(rows, {}, t0)
        by_orm = [reservation_of(r) for r in s.scalars(select(ReservationRow).order_by(ReservationRow.id))]
    assert first == by_orm and len(first) == 3  # pods with their GPUs, aware times, on both databases
    assert all(p.gpu_indices for r in first for p in r.pods)

    with db() as s:  # read again: the same objects
        assert all(a is b for a, b in zip(kept.reservations(locked_active_rows(s), {}, t0), first, strict=True))

    renewed = {r.id: t0 + POLICY.lease + timedelta(minutes=1) for r in first}
    with db() as s:  # leases renewed while they run: the engine reads only that they run, kept
        again = kept.reservations(locked_active_rows(s), renewed, t0 + timedelta(minutes=1))
    assert all(a is b for a, b in zip(again, first, strict=True))

    target = first[0]
    with db() as s:  # another column changed: made anew, the rest kept
        s.execute(update(ReservationRow).where(ReservationRow.id == target.id).values(preempted_by="someone"))
        s.commit()
        changed = kept.reservations(locked_active_rows(s), {}, t0)
    assert changed[0] == dataclasses.replace(target, preempted_by="someone") and changed[0] is not target
    assert changed[1] is first[1] and changed[2] is first[2]

    ended = t0 + POLICY.lease + timedelta(seconds=1)  # the kept leases have ended by this clock
    with db() as s:
        late = kept.reservations(locked_active_rows(s), {first[1].id: ended + POLICY.lease}, ended)
    assert late[1] is not first[1] and late[1].expires_at == ended + POLICY.lease  # renewed: the new lease
    assert late[2] is first[2] and late[0] is changed[0]  # not renewed: their ended leases, as their rows have them
    with db() as s:  # the renewal was not written (its cycle rolled back, say): the row's ended lease again
        undone = kept.reservations(locked_active_rows(s), {}, ended)
    assert undone[1] == first[1] and undone[1].expires_at < ended and undone[2] is first[2]
    with db() as s:  # a lease another process renewed: the row's lease, once the kept one has ended
        s.execute(
            update(ReservationRow).where(ReservationRow.id == first[2].id).values(expires_at=ended + POLICY.lease)
        )
        s.commit()
        assert kept.reservations(locked_active_rows(s), {}, ended)[2].expires_at == ended + POLICY.lease

    with db() as s:  # a row no longer active is not kept: the next cycle makes what it reads
        s.execute(update(ReservationRow).where(ReservationRow.id == target.id).values(active=False))
        s.commit()
        assert [r.id for r in kept.reservations(locked_active_rows(s), {}, ended)] == [r.id for r in late[1:]]
        s.execute(update(ReservationRow).where(ReservationRow.id == target.id).values(active=True))
        s.commit()
        assert kept.reservations(locked_active_rows(s), {}, ended)[0] is not late[0]
    assert held[0].state.value == "admitted"
