"""The placement queue and its admission cycle, kept in the metadata DB.

An admission cycle first takes the admission lock row (`take_admission_lock`), so two API-server
processes never both grant the same free GPUs, then locks the rows it decides on: the pending
placements and those holding an active reservation, in id order, then their reservations. Other
writes take only the row of the placement they change (and its reservation, in that order): a
submission inserts a new row, a start, renewal or release locks one placement. They never wait for
each other, only for a cycle that holds their row; and a cycle never decides on a row that a write
changed under it. On SQLite (one writer at a time anyway) every write takes the admission lock
first, as the single writer it gets in any case, so no transaction has to upgrade a read to a write.
The engine decides; this module only loads, asks and records.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, Select, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session, load_only

from airflow_mcsched.decision import AdmissionResult, Outcome, Policy, Reason, Reservation, decide
from airflow_mcsched.decision.gc_pause import collector_paused
from airflow_mcsched.governance.reclaim import RECLAIM_ACTOR, HeldReservation, idle_message, is_idle
from airflow_mcsched.service.cluster_store import ClusterStore, audit, audit_values
from airflow_mcsched.service.cycle_writes import CycleWrites
from airflow_mcsched.service.held_reservations import KEPT, locked_active_rows
from airflow_mcsched.service.placement_mapping import (
    engine_request,
    json_of,
    placement_out,
    request_of,
    reservation_values,
)
from airflow_mcsched.service.policy_audit import record_policy_change
from airflow_mcsched.service.schemas import PlacementOut, PlacementState, PlacementSubmit, RejectionOut
from airflow_mcsched.service.stored_explanations import StoredExplanations
from airflow_mcsched.service.tables import (
    AdmissionLockRow,
    AuditRow,
    PlacementRow,
    RejectionListRow,
    ReservationRow,
    as_utc,
    in_pages,
)
from airflow_mcsched.service.view_loader import cached_view
from airflow_mcsched.service.visibility import EVERYTHING, Visibility


class PlacementNotFound(LookupError):
    def __str__(self) -> str:
        return f"no placement {self.args[0]!r}"


_ENDING_ONLY = load_only(
    PlacementRow.id,
    PlacementRow.state,
    PlacementRow.started_at,
    PlacementRow.gpus,
    PlacementRow.price_per_gpu_hour,
    PlacementRow.end_reason,
)
"""What a cycle reads of a placement that holds capacity and that it ends or stops (`_end`). A cycle
locks every such placement with the pending ones, 27,000 on a full fleet of 100 clusters, but
reads only their ids and states (`_cycle`); reading all their columns (the request and explanation
JSON above all) took three fifths of such a cycle (`benchmarks/bench_service_cycle.py
--busy-file`). The pending placements' rows are read whole, in one more query."""


class PlacementConflict(ValueError):
    """The call does not fit the placement's state (e.g. starting a released placement)."""


class MissingTeam(ValueError):
    pass


def take_admission_lock(session: Session, now: datetime, *, cycle: bool = True) -> None:
    """Serialise placement writers: the first statement of the transaction is this UPDATE. A writer
    that is not an admission cycle (`cycle` False, a purge) takes the lock without counting itself."""
    values = {"cycles": AdmissionLockRow.cycles + 1, "last_cycle_at": now} if cycle else {"id": AdmissionLockRow.id}
    stmt = (
        update(AdmissionLockRow)
        .where(AdmissionLockRow.id == 1)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if session.execute(stmt).rowcount == 1:
        return
    try:
        with session.begin_nested():
            session.add(AdmissionLockRow(id=1, cycles=1 if cycle else 0, last_cycle_at=now if cycle else None))
    except IntegrityError:  # another process created it first: lock it now
        session.execute(stmt)


def team_and_project(submit: PlacementSubmit) -> tuple[str, str | None]:
    """The task's own team/project, else the DAG's params, else its `team:x` / `project:y` tags."""
    tags = dict(t.split(":", 1) for t in submit.dag_tags if ":" in t)
    team = submit.ask.team or submit.dag_params.get("team") or tags.get("team")
    project = submit.ask.project or submit.dag_params.get("project") or tags.get("project")
    if not team:
        raise MissingTeam(
            "ask.team: no team given; set team= on the operator, a 'team' DAG param, or a 'team:<name>' DAG tag"
        )
    return str(team), None if project is None else str(project)


@dataclass(frozen=True)
class CycleReport:
    admitted: int
    waiting: int
    preempting: int
    reclaimed: int


class PlacementStore:
    """Placement operations within one session; the caller commits."""

    def __init__(self, session: Session, policy: Policy) -> None:
        self.session = session
        self.policy = policy
        self._serialised = False  # SQLite: the admission lock is held by this transaction
        self._locked: set[str] = set()  # placements whose rows this transaction has locked

    # -- reading --------------------------------------------------------------------------------
    def _row(self, placement_id: str, lock: bool = False) -> PlacementRow:
        """The placement; with `lock`, its row locked for this transaction and read afresh (a
        cycle that held it may have changed it meanwhile)."""
        row = self.session.get(PlacementRow, placement_id, with_for_update=lock, populate_existing=lock)
        if row is None:
            raise PlacementNotFound(placement_id)
        return row

    def _reservation(self, placement_id: str, lock: bool = False) -> ReservationRow | None:
        q = select(ReservationRow).where(ReservationRow.placement_id == placement_id)
        if lock:
            q = q.with_for_update().execution_options(populate_existing=True)
        return self.session.scalars(q).one_or_none()

    def _serialise_on_sqlite(self, now: datetime) -> None:
        """SQLite has one writer: take the admission lock first so a read is never upgraded to a
        write (which SQLite refuses at once when another writer committed in between). PostgreSQL
        writers lock rows instead (`_row(..., lock=True)`)."""
        if not self._serialised and self.session.get_bind().dialect.name == "sqlite":
            take_admission_lock(self.session, now)
        self._serialised = True

    def _writable(self, placement_id: str, now: datetime) -> tuple[PlacementRow, ReservationRow | None]:
        """A write's rows, locked in the order cycles lock them: the placement, then its reservation."""
        self._serialise_on_sqlite(now)
        fresh = placement_id not in self._locked
        row = self._row(placement_id, lock=fresh)
        res = self._reservation(placement_id, lock=fresh)
        self._locked.add(placement_id)
        return row, res

    def lock(self, placement_id: str) -> datetime:
        """Lock a placement for a write in this transaction, then read the clock. Rows read and
        times stamped after the lock follow commit order: a state read before it may be stale (a
        release would cancel a placement a cycle just admitted), and a time taken before it may
        precede the commit of the cycle it waited for."""
        self._writable(placement_id, datetime.now(UTC))
        return datetime.now(UTC)

    def out(self, row: PlacementRow) -> PlacementOut:
        return self.outs([row])[0]

    def outs(self, rows: Sequence[PlacementRow]) -> list[PlacementOut]:
        """The API's placements, what they share read once: their reservations in a query per page,
        each cluster's connection and each list of rejections once (a page of history names a few
        clusters and lists for hundreds of placements; read per row, 1,000 placements took 2-3 s)."""
        reservations: dict[str, ReservationRow] = {}
        for ids in in_pages([r.id for r in rows]):
            q = select(ReservationRow).where(ReservationRow.placement_id.in_(ids))
            reservations.update((res.placement_id, res) for res in self.session.scalars(q))
        connections = {name: self._connection(name) for name in {r.cluster for r in rows if r.cluster}}
        lists = self._rejection_lists(rows)
        return [
            placement_out(
                row,
                reservations.get(row.id),
                *connections.get(row.cluster or "", (None, None)),
                None if row.rejections_digest is None else lists[row.rejections_digest],
            )
            for row in rows
        ]

    def _connection(self, cluster: str) -> tuple[str | None, str | None]:
        """(namespace, connection id) of a cluster; (None, None) once it is deleted (the lineage
        keeps its name)."""
        try:
            profile = ClusterStore(self.session).get(cluster)
        except LookupError:
            return None, None
        return profile.namespace, profile.conn_id

    def _rejection_lists(self, rows: Sequence[PlacementRow]) -> dict[str, list[RejectionOut]]:
        """The lists of rejections the rows name, each read and validated once (rows decided before
        revision 0005 hold theirs inline and name none). A cycle that committed since a row was read
        may have given it another list and dropped this one: such rows are read again, once."""
        lists: dict[str, list[RejectionOut]] = {}
        for attempt in range(2):
            wanted = sorted({r.rejections_digest for r in rows if r.rejections_digest} - lists.keys())
            for digests in in_pages(wanted):
                q = select(RejectionListRow).where(RejectionListRow.digest.in_(digests))
                for listed in self.session.scalars(q):
                    lists[listed.digest] = [RejectionOut.model_validate(r) for r in listed.rejections]
            missing = [r for r in rows if r.rejections_digest and r.rejections_digest not in lists]
            if not missing:
                return lists
            if attempt == 0:
                for row in missing:
                    self.session.refresh(row)
        raise LookupError(
            f"placement {missing[0].id}: its list of rejections {missing[0].rejections_digest} is missing"
        )

    def get(self, placement_id: str, seen: Visibility = EVERYTHING) -> PlacementRow:
        """The placement; one the reader may not see is as missing as one that does not exist."""
        row = self._row(placement_id)
        if not seen.sees(row):
            raise PlacementNotFound(placement_id)
        return row

    def list(
        self,
        dag_id: str | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
        team: str | None = None,
        state: PlacementState | None = None,
        limit: int = 500,
        seen: Visibility = EVERYTHING,
    ) -> Sequence[PlacementRow]:
        q = seen.placements(select(PlacementRow).order_by(PlacementRow.queued_at, PlacementRow.id).limit(limit))
        for column, value in (
            (PlacementRow.dag_id, dag_id),
            (PlacementRow.run_id, run_id),
            (PlacementRow.task_id, task_id),
            (PlacementRow.team, team),
            (PlacementRow.state, None if state is None else state.value),
        ):
            if value is not None:
                q = q.where(column == value)
        return self.session.scalars(q).all()

    # -- writing (each call takes the admission lock first) ---------------------------------------
    def submit(self, submit: PlacementSubmit, actor: str, now: datetime, ti_id: str | None = None) -> PlacementRow:
        """Queue a placement; the same (task try, attempt) returns the placement already queued,
        also when two copies race (the unique key refuses the second insert)."""
        self._serialise_on_sqlite(now)
        existing = self._same_attempt(submit)
        if existing is not None:
            return existing
        t = submit.task
        team, project = team_and_project(submit)
        row_id = uuid.uuid4().hex
        request = engine_request(row_id, submit.ask, team, project, now)
        row = PlacementRow(
            id=row_id,
            dag_id=t.dag_id,
            run_id=t.run_id,
            task_id=t.task_id,
            map_index=t.map_index,
            try_number=t.try_number,
            attempt=submit.attempt,
            ti_id=ti_id,
            team=team,
            project=project,
            priority_class=request.priority_class,
            kind=request.kind.value,
            interruptible=request.interruptible,
            state=PlacementState.PENDING.value,
            ask=json_of(submit.ask),
            request=request.model_dump(mode="json"),
            submitted_by=actor,
            queued_at=now,
            gpus=request.gpu_equivalent,
        )
        try:
            with self.session.begin_nested():
                self.session.add(row)
        except IntegrityError:
            existing = self._same_attempt(submit)
            if existing is None:
                raise
            return existing
        audit(self.session, actor, "placement.submit", "placement", row_id, task=t.model_dump(), attempt=submit.attempt)
        return row

    def _same_attempt(self, submit: PlacementSubmit) -> PlacementRow | None:
        t = submit.task
        return self.session.scalars(
            select(PlacementRow).where(
                PlacementRow.dag_id == t.dag_id,
                PlacementRow.run_id == t.run_id,
                PlacementRow.task_id == t.task_id,
                PlacementRow.map_index == t.map_index,
                PlacementRow.try_number == t.try_number,
                PlacementRow.attempt == submit.attempt,
            )
        ).one_or_none()

    def run_cycle(self, now: datetime | None = None, actor: str = "admission") -> CycleReport:
        """Decide the whole pending queue at once and record every decision with its explanation.

        Without `now`, the clock is read once every row the cycle decides on is locked: a write
        that held one of them committed before, so its times precede the cycle's (grants never
        appear to start before the release that made room for them)."""
        with collector_paused():  # see gc_pause.py: what a cycle reads, decides and writes lives until it ends
            return self._cycle(now, actor)

    def _cycle(self, now: datetime | None, actor: str) -> CycleReport:
        take_admission_lock(self.session, now or datetime.now(UTC))
        held = select(ReservationRow.placement_id).where(ReservationRow.active.is_(True))
        locked = self.session.execute(
            select(PlacementRow.id, PlacementRow.state)
            .where(or_(PlacementRow.state == PlacementState.PENDING.value, PlacementRow.id.in_(held)))
            .order_by(PlacementRow.id)
            .with_for_update()
        ).all()
        pending_ids = {id_ for id_, state in locked if state == PlacementState.PENDING.value}
        pending = []
        if pending_ids:  # their rows, in one query (rows queued since the lock: not decided)
            query = select(PlacementRow).where(PlacementRow.state == PlacementState.PENDING.value)
            queued = self.session.scalars(query.execution_options(populate_existing=True)).all()
            pending = [r for r in queued if r.id in pending_ids]
        pending.sort(key=lambda r: (r.queued_at, r.id))
        record_policy_change(self.session, self.policy)
        held_rows = locked_active_rows(self.session)
        now = now or datetime.now(UTC)
        view = cached_view(self.session, now)
        kept = KEPT.reservations(held_rows, self._renew_observed(held_rows, view, now), now)
        active = self._reclaim_idle(kept, view, now)
        result = decide(view, [request_of(r) for r in pending], active, self.policy, now)
        return self._record(result, {r.id: r for r in pending}, {r.id: r for r in active}, now, actor)

    def _renew_observed(self, rows: Sequence[Row], view, now: datetime) -> dict[str, datetime]:
        """A reservation whose pod the cluster shows (on a node or waiting for one) is alive: its lease
        is renewed by that sight, so deferred tasks (which cannot renew while the triggerer waits on
        the pod) keep their grant. The renewed leases by reservation id, written a page of rows per
        statement (on a full fleet, most rows every cycle)."""
        lease_end = now + self.policy.lease
        renewed = [
            row.id for row in rows if view.holds_pod_of(row.cluster, row.id) and as_utc(row.expires_at) < lease_end
        ]
        for ids in in_pages(renewed):
            self.session.execute(
                update(ReservationRow).where(ReservationRow.id.in_(ids)).values(expires_at=lease_end),
                execution_options={"synchronize_session": "evaluate"},
            )
        return dict.fromkeys(renewed, lease_end)

    def _reclaim_idle(self, active: Sequence[Reservation], view, now: datetime) -> Sequence[Reservation]:
        """End reservations held past the policy's idle limit whose pod never started; the rest stay."""
        limit = self.policy.idle_reservation
        old = [r for r in active if limit is not None and now - r.granted_at >= limit]
        if not old:
            return active
        started = set(
            self.session.scalars(
                select(PlacementRow.id).where(
                    PlacementRow.id.in_([r.request_id for r in old]), PlacementRow.started_at.is_not(None)
                )
            )
        )
        idle = [r for r in old if is_idle(HeldReservation(r, started=r.request_id in started), view, now, limit)]
        if not idle:
            return active
        rows, placements = self._changed_rows(idle)
        for r in idle:
            res = rows[r.id]
            message = idle_message(r, limit)
            self._end(placements[r.request_id], res, PlacementState.EXPIRED, f"IdleReservation: {message}", now)
            self._audit_reclaim(res, Reason.IDLE_RESERVATION, message, r.gpu_equivalent)
        gone = {r.id for r in idle}
        return [r for r in active if r.id not in gone]

    def _changed_rows(
        self, reservations: Sequence[Reservation]
    ) -> tuple[dict[str, ReservationRow], dict[str, PlacementRow]]:
        """The rows of the reservations a cycle ends or stops, by reservation id, and their placements'
        rows, by placement id (both locked by the cycle already): the cycle read the others as plain
        rows. Held here: the session keeps rows by weak reference."""
        held = self._afresh(select(ReservationRow), ReservationRow.id, [r.id for r in reservations])
        placements = self._afresh(
            select(PlacementRow).options(_ENDING_ONLY), PlacementRow.id, [r.request_id for r in reservations]
        )
        return held, placements

    def _afresh(self, query: Select, key: InstrumentedAttribute, ids: Sequence[str]) -> dict[str, Any]:
        """The rows of `query` whose `key` is one of `ids`, by it, read afresh in a query per page."""
        out: dict[str, Any] = {}
        for page in in_pages(ids):
            page_query = query.where(key.in_(page)).execution_options(populate_existing=True)
            out.update((row.id, row) for row in self.session.scalars(page_query))
        return out

    def _audit_reclaim(self, res: ReservationRow, reason: Reason, message: str, gpus: float) -> None:
        audit(
            self.session,
            RECLAIM_ACTOR,
            "reservation.reclaim",
            "placement",
            res.placement_id,
            reason=str(reason),
            message=message,
            cluster=res.cluster,
            pool=res.pool,
            gpu_type=res.gpu_type,
            gpus_freed=gpus,
        )

    def handover(self, placement_id: str, task_id: str, now: datetime, actor: str) -> PlacementRow:
        """Let another task of the same DAG run (any try) act on this placement from now on."""
        row, _ = self._writable(placement_id, now)
        if not PlacementState(row.state).holds_capacity:
            raise PlacementConflict(f"placement {placement_id} is {row.state}; only a granted placement is handed over")
        row.holder_task_id = task_id
        audit(self.session, actor, "placement.handover", "placement", row.id, to_task=task_id)
        return row

    def _record(
        self,
        result: AdmissionResult,
        pending: dict[str, PlacementRow],
        active: dict[str, Reservation],
        now: datetime,
        actor: str,
    ) -> CycleReport:
        changed = [active[r.reservation_id] for r in result.reclaimed]
        changed += [active[v.reservation_id] for v in result.preemptions]
        rows, placements = self._changed_rows(changed) if changed else ({}, {})
        for lapsed in result.reclaimed:
            res = rows[lapsed.reservation_id]
            row = placements[res.placement_id]
            state = PlacementState.PREEMPTED if row.state == PlacementState.PREEMPTED.value else PlacementState.EXPIRED
            self._end(row, res, state, f"{lapsed.reason}: {lapsed.message}", now)
            self._audit_reclaim(res, lapsed.reason, lapsed.message, active[lapsed.reservation_id].gpu_equivalent)
        for victim in result.preemptions:
            res = rows[victim.reservation_id]
            res.preempted_by = victim.for_request
            row = placements[res.placement_id]
            if row.state in (PlacementState.ADMITTED.value, PlacementState.RUNNING.value):
                row.state = PlacementState.PREEMPTED.value
                row.end_reason = f"{victim.reason}: {victim.message}"
            audit(
                self.session,
                actor,
                "placement.preempt",
                "placement",
                res.placement_id,
                reason=str(victim.reason),
                message=victim.message,
                for_placement=victim.for_request,
            )
        counts = dict.fromkeys(Outcome, 0)
        stored_explanation = StoredExplanations()
        writes = CycleWrites(self.session)
        for decision in result.decisions:
            row = pending[decision.request_id]
            counts[decision.outcome] += 1
            explanation = stored_explanation(decision, now)
            if (
                decision.outcome is Outcome.WAITING
                and row.rejections_digest == explanation.rejections.digest
                and _same_explanation(row.explanation, explanation.value)
            ):
                continue  # still waiting for the same reasons: keep when it was first said, write nothing
            if decision.outcome is not Outcome.ADMITTED or decision.reservation is None:
                writes.update(row, {"decided_at": now}, explanation)
                continue
            placement = decision.placement
            assert placement is not None, "an admission names its placement"
            writes.update(
                row,
                {
                    "decided_at": now,
                    "state": PlacementState.ADMITTED.value,
                    "admitted_at": now,
                    "cluster": placement.cluster,
                    "pool": placement.pool,
                    "nodes": list(placement.nodes),
                    "gpu_type": decision.reservation.gpu_type,
                    "price_per_gpu_hour": placement.price_per_gpu_hour,
                    "score": placement.score,
                },
                explanation,
            )
            writes.insert(ReservationRow, reservation_values(decision.reservation))
            writes.insert(
                AuditRow,
                audit_values(
                    actor,
                    "placement.admit",
                    "placement",
                    row.id,
                    cluster=placement.cluster,
                    pool=placement.pool,
                    score=round(placement.score, 4),
                    price=placement.price_per_gpu_hour,
                ),
            )
        writes.write()
        return CycleReport(
            counts[Outcome.ADMITTED], counts[Outcome.WAITING], counts[Outcome.PREEMPTING], len(result.reclaimed)
        )

    def renew(self, placement_id: str, now: datetime) -> PlacementRow:
        """Extend the lease of a placement that holds capacity; a preempted one learns it here."""
        row, res = self._writable(placement_id, now)
        if PlacementState(row.state).holds_capacity and res is not None and res.active:
            res.expires_at = now + self.policy.lease
        return row

    def start(self, placement_id: str, pod_name: str, now: datetime) -> PlacementRow:
        row, res = self._writable(placement_id, now)
        if row.state == PlacementState.RUNNING.value and row.pod_name == pod_name:
            return row  # a repeated report
        if row.state != PlacementState.ADMITTED.value:
            raise PlacementConflict(f"placement {placement_id} is {row.state}; only an admitted placement can start")
        row.state = PlacementState.RUNNING.value
        row.started_at = now
        row.pod_name = pod_name
        if res is not None:
            res.expires_at = now + self.policy.lease
        return row

    def release(self, placement_id: str, outcome: str, message: str, now: datetime, actor: str) -> PlacementRow:
        """The step ended (or was stopped): free its capacity and record GPU-hours and cost."""
        row, res = self._writable(placement_id, now)
        state = PlacementState(row.state)
        stopping_victim = state is PlacementState.PREEMPTED and res is not None and res.active
        if state.final and not stopping_victim:
            return row  # ended already: releasing again changes nothing
        final = {PlacementState.PREEMPTED: state, PlacementState.PENDING: PlacementState.CANCELLED}.get(
            state, PlacementState.RELEASED
        )
        reason = row.end_reason if stopping_victim else f"{outcome}: {message}".rstrip(": ")
        self._end(row, res, final, reason, now)
        audit(self.session, actor, f"placement.{final.value}", "placement", row.id, outcome=outcome, cost=row.cost)
        return row

    def fail(self, placement_id: str, reason: str, message: str, now: datetime, actor: str) -> PlacementRow:
        """The chosen cluster could not run the step: free the capacity; the next attempt avoids it."""
        row, res = self._writable(placement_id, now)
        if not PlacementState(row.state).final:
            self._end(row, res, PlacementState.FAILED, f"{reason}: {message}", now)
            audit(
                self.session,
                actor,
                "placement.fail",
                "placement",
                row.id,
                cluster=row.cluster,
                reason=reason,
                message=message,
            )
        return row

    def _end(
        self, row: PlacementRow, res: ReservationRow | None, state: PlacementState, reason: str, now: datetime
    ) -> None:
        row.state = state.value
        row.end_reason = reason
        row.ended_at = now
        ran = 0.0 if row.started_at is None else max(0.0, (now - row.started_at).total_seconds())
        row.gpu_hours = row.gpus * ran / 3600.0
        row.cost = row.gpu_hours * (row.price_per_gpu_hour or 0.0)
        if res is not None and res.active:
            res.active = False
            res.ended_at = now
        self.session.flush()


def _same_explanation(before: dict | None, after: dict) -> bool:
    """Equal but for the time they were given: a queue that does not move costs no writes."""
    if before is None:
        return False
    return {k: v for k, v in before.items() if k != "decided_at"} == {
        k: v for k, v in after.items() if k != "decided_at"
    }
