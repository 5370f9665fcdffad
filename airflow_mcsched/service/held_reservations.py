"""The active reservations an admission cycle hands the engine: read as plain rows, kept across cycles.

Every cycle hands the engine every active reservation: 27,000 on a full fleet of 100 clusters.
Read as ORM rows, they were the largest part of such a cycle outside the engine: an instance,
its state and its identity-map entry per row, made and dropped every cycle
(`benchmarks/bench_service_cycle.py --busy-file`). A cycle changes a handful of them (the ones it
reclaims or stops), so it reads their columns as plain rows, locked as before, and loads the ORM
rows of the few it changes (`PlacementStore._record`).

And it keeps the engine's reservation of each row from one cycle to the next, in this process,
while the row reads the same: a full fleet's rows are mostly the ones the cycle before read, and
the engine keeps what it worked out about running work by its value or its identity (the victims
of a pool, `PlanMemory.victims_alike`; a pool's searches for work to stop), which a new object per
row each cycle made it compare or work out again. The lease is the exception: it is renewed while
the cluster shows the pod (`PlacementStore._renew_observed`), so most rows move it every cycle. The
engine reads a lease only as ended or not by the cycle's clock (`AdmissionCycle`: an ended one is
reclaimed, its end in the message), so a reservation kept from before stands for its row when the
rest of the row is the same and both leases still run, and is made anew when either has ended.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import DateTime, Row, Text, cast, select, type_coerce
from sqlalchemy.orm import Session

from airflow_mcsched.decision import Reservation
from airflow_mcsched.service.placement_mapping import allocation_of, reservation_from
from airflow_mcsched.service.tables import ReservationRow, as_utc

_AS_READ = DateTime()

_COLUMNS = (
    ReservationRow.id,
    ReservationRow.placement_id,
    ReservationRow.cluster,
    ReservationRow.pool,
    cast(ReservationRow.pods, Text),  # its JSON text: compared as read, decoded only for a new reservation
    ReservationRow.team,
    ReservationRow.priority,
    ReservationRow.interruptible,
    ReservationRow.price_per_gpu_hour,
    type_coerce(ReservationRow.granted_at, _AS_READ),
    type_coerce(ReservationRow.expected_end, _AS_READ),
    ReservationRow.gpu_type,
    ReservationRow.priority_class,
    ReservationRow.project,
    ReservationRow.spread_group,
    ReservationRow.preempted_by,
    type_coerce(ReservationRow.expires_at, _AS_READ),
)
"""What the engine's reservation is made of, the lease last: a row but its lease is `row[:-1]`.

Times come as the database gives them (naive on SQLite), made UTC-aware (`as_utc`) only for a
reservation made anew and for the lease: converting three times a row, as the column's type does,
was a third of reading 27,000 rows."""


_NAMES = tuple(select(*_COLUMNS).selected_columns.keys())[:-1]
"""The columns' names, but the lease's: those of the row's columns (`reservation_from` reads them)."""


def locked_active_rows(session: Session) -> Sequence[Row]:
    """Every active reservation's columns (`_COLUMNS`), its row locked for the transaction, in id
    order as cycles lock them. On the session's connection, not through the ORM (which would wrap
    every row for nothing): what the session holds unwritten is written first."""
    session.flush()
    query = select(*_COLUMNS).where(ReservationRow.active.is_(True)).order_by(ReservationRow.id).with_for_update()
    return session.connection().execute(query).all()


_OTHER = object()
"""A kept reservation's lease is not the one its row was read with (compared again next time)."""


class KeptReservations:
    """The engine's reservation of each active row, kept from the cycle before while it stands for the
    row (see above). One per process: the rows are read every cycle, so a row another process changed
    is made anew here."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, Reservation, object]] = {}
        """By reservation id: the row but its lease, its reservation, and the lease read when the
        reservation's is that one (else `_OTHER`: renewed in the cycle, or kept from before)."""
        self._lock = threading.Lock()

    def reservations(self, rows: Iterable[Row], leases: dict[str, datetime], now: datetime) -> list[Reservation]:
        """The engine's reservations of `rows` (`locked_active_rows`), in their order; `leases` the
        leases renewed in this cycle by reservation id (the rows were read before), the others as read.
        Only these rows are kept for the next cycle."""
        with self._lock:
            kept, self._kept = self._kept, {}
        now_kept: dict[str, tuple[tuple, Reservation, object]] = {}
        out = []
        for row in rows:
            key, read = row[:-1], row[-1]
            id_ = key[0]
            lease = leases.get(id_)
            known = kept.get(id_)
            if known is not None and known[0] == key:
                r = known[1]
                if lease is None and read == known[2]:  # its lease is the one read, as before
                    now_kept[id_] = known
                    out.append(r)
                    continue
                expires = lease or as_utc(read)
                if r.expires_at == expires or (r.expires_at > now and expires > now):
                    now_kept[id_] = (key, r, read if lease is None and r.expires_at == expires else _OTHER)
                    out.append(r)
                    continue
            r = _reservation(key, lease or as_utc(read))
            now_kept[id_] = (key, r, read if lease is None else _OTHER)
            out.append(r)
        with self._lock:
            self._kept = now_kept
        return out


def _reservation(key: tuple, expires_at: datetime) -> Reservation:
    """A row's reservation (its values but the lease, as `_COLUMNS` reads them) with this lease."""
    values = dict(zip(_NAMES, key, strict=True))
    values["granted_at"], values["expected_end"] = as_utc(values["granted_at"]), as_utc(values["expected_end"])
    return reservation_from(values, tuple(map(allocation_of, json.loads(values["pods"]))), expires_at)


KEPT = KeptReservations()
"""The process's kept reservations (every store's cycles share them: the rows decide what holds)."""
