"""The persistent placement queue and its admission cycle, on real metadata DBs (SQLite, PostgreSQL)."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.decision import Policy
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.placement_store import MissingTeam, PlacementStore
from airflow_mcsched.service.schemas import PlacementState, PlacementSubmit
from airflow_mcsched.service.status_store import StatusStore
from airflow_mcsched.service.tables import AuditRow, ReservationRow
from tests.decision.fleet_factory import observe

FLEET = load_fleet_file(Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml")
A100 = "NVIDIA-A100-SXM4-80GB"
POLICY = Policy()


def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def db(metadata_session_factory):
    """The example fleet recorded, every cluster read with all its capacity free."""
    with metadata_session_factory() as s:
        ClusterStore(s).apply(FLEET, "test")
        for profile in FLEET.clusters:
            StatusStore(s).record(observe(profile, at=now()))
    return metadata_session_factory


def submit(task: str, gpus: int = 8, try_number: int = 1, attempt: int = 1, **ask) -> PlacementSubmit:
    ask = {"team": "nlp", "kind": "training", "gpus": gpus, "gpu_types": [A100], "cpu": 8, "memory_gib": 64, **ask}
    return PlacementSubmit.model_validate(
        {"task": {"dag_id": "d", "run_id": "r", "task_id": task, "try_number": try_number}, "ask": ask,
         "attempt": attempt}
    )  # fmt: skip


def place(db, body: PlacementSubmit, when: datetime | None = None):
    with db() as s:
        store = PlacementStore(s, POLICY)
        row = store.submit(body, "test", when or now())
        store.run_cycle(when or now())
        return store.out(row)


def test_a_request_is_admitted_with_its_explanation(db):
    out = place(db, submit("train"))
    assert out.state is PlacementState.ADMITTED
    assert (out.cluster, out.pool, out.gpu_type) == ("onprem-a100", "a100-ib", A100)
    assert out.connection_id == "mcsched_onprem_a100" and out.reservation_id
    assert out.explanation.chosen.cluster == "onprem-a100"
    assert out.lease_expires_at is not None


def test_submitting_the_same_task_try_again_returns_the_same_placement(db):
    first, again = place(db, submit("train")), place(db, submit("train"))
    assert first.id == again.id
    retry = place(db, submit("train", try_number=2))  # an Airflow retry is placed anew
    assert retry.id != first.id


def test_team_comes_from_dag_params_or_tags_else_a_clear_error(db):
    body = submit("t", team=None)
    with db() as s, pytest.raises(MissingTeam, match="team:<name>"):
        PlacementStore(s, POLICY).submit(body, "test", now())
    tagged = body.model_copy(update={"dag_tags": ["team:vision", "project:cars"]})
    out = place(db, tagged)
    assert (out.team, out.project) == ("vision", "cars")


def test_a_waiting_request_says_why_and_is_admitted_when_capacity_frees(db):
    a = place(db, submit("a", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]))
    b = place(db, submit("b", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]))
    assert a.state is PlacementState.ADMITTED and b.state is PlacementState.PENDING
    assert b.explanation.outcome == "waiting"
    assert any(r.cluster == "cloud-h100" and r.reason == "InsufficientFreeGpus" for r in b.explanation.rejections)
    with db() as s:
        store = PlacementStore(s, POLICY)
        store.release(a.id, "succeeded", "", now(), "test")
        store.run_cycle(now())
        assert store.get(b.id).state == PlacementState.ADMITTED.value


def test_release_records_gpu_hours_and_cost_from_known_times_and_price(db):
    t0 = now()
    out = place(db, submit("train", gpus=4), when=t0)
    with db() as s:
        store = PlacementStore(s, POLICY)
        store.start(out.id, "pod-1", t0 + timedelta(minutes=1))
        row = store.release(out.id, "succeeded", "", t0 + timedelta(minutes=1, hours=2), "test")
        assert row.state == PlacementState.RELEASED.value
        assert row.gpu_hours == pytest.approx(4 * 2.0)
        assert row.cost == pytest.approx(4 * 2.0 * 1.20)
        res = s.scalars(select(ReservationRow).where(ReservationRow.placement_id == out.id)).one()
        assert not res.active


def test_an_unrenewed_lease_expires_and_its_capacity_is_reclaimed(db):
    t0 = now()
    out = place(db, submit("train", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), when=t0)
    later = t0 + POLICY.lease + timedelta(seconds=1)
    with db() as s:
        StatusStore(s).record(observe(FLEET.cluster("cloud-h100"), at=later))  # a fresh read: no pod showed up
        PlacementStore(s, POLICY).run_cycle(later)
    nxt = place(db, submit("next", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), when=later)
    with db() as s:
        assert PlacementStore(s, POLICY).get(out.id).state == PlacementState.EXPIRED.value
        assert s.scalars(select(AuditRow).where(AuditRow.action == "reservation.reclaim")).first() is not None
    assert nxt.state is PlacementState.ADMITTED


def test_a_higher_priority_request_goes_first(db):
    with db() as s:  # both queued before any cycle runs
        store = PlacementStore(s, POLICY)
        t0 = now()
        low = store.submit(submit("low", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), "test", t0)
        high = store.submit(
            submit("high", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"], priority_class="high"), "test",
            t0 + timedelta(seconds=1),
        )  # fmt: skip
        store.run_cycle(t0 + timedelta(seconds=2))
        assert (store.get(high.id).state, store.get(low.id).state) == ("admitted", "pending")


def test_a_fault_frees_the_capacity_and_the_next_attempt_avoids_the_cluster(db):
    first = place(db, submit("train", gpus=8))
    with db() as s:
        PlacementStore(s, POLICY).fail(first.id, "ClusterApiUnavailable", "connection refused", now(), "test")
    second = place(db, submit("train", gpus=8, attempt=2, avoid_clusters=[first.cluster],
                              gpu_types=[A100, "NVIDIA-H100-80GB-HBM3"]))  # fmt: skip
    assert second.state is PlacementState.ADMITTED and second.cluster != first.cluster


def at_once(workers: int, work) -> list[BaseException]:
    """Run `work(i)` on `workers` threads released together; the errors they raised."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(workers)

    def worker(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_concurrent_requests_for_less_capacity_than_asked_never_over_commit(db):
    """24 workers at once ask for 2 A100s each; 8 of the fleet's 16 are free for them (8 are kept for
    the `critical` class): exactly four are admitted, and no node ever holds more than it has."""
    assert at_once(24, lambda i: place(db, submit(f"w{i}", gpus=2))) == []
    with db() as s:
        rows = PlacementStore(s, POLICY).list(dag_id="d")
        states = Counter(r.state for r in rows)
        reservations = s.scalars(select(ReservationRow).where(ReservationRow.active.is_(True))).all()
    assert states == {"admitted": 4, "pending": 20}
    per_node = Counter()
    for r in reservations:
        for pod in r.pods:
            per_node[pod["node"]] += pod["gpus"]
    assert per_node and all(g <= 8 for g in per_node.values()) and sum(per_node.values()) == 8


def test_starts_releases_and_cycles_at_once_neither_deadlock_nor_over_commit(db):
    """Writes lock their placement then its reservation; cycles lock every row they decide on in
    the same order: 12 workers submitting, starting and releasing while cycles run never deadlock
    (PostgreSQL would abort one of them), and every grant ends."""

    def steps(i: int) -> None:
        for step in range(4):
            out = place(db, submit(f"mix{i}-{step}", gpus=2))
            with db() as s:
                store = PlacementStore(s, POLICY)
                if out.state is PlacementState.ADMITTED:
                    store.start(out.id, f"pod-{i}-{step}", now())
                    store.renew(out.id, now())
            with db() as s:
                PlacementStore(s, POLICY).release(out.id, "succeeded", "", now(), "test")
            with db() as s:
                PlacementStore(s, POLICY).run_cycle()

    assert at_once(12, steps) == []
    with db() as s:
        rows = PlacementStore(s, POLICY).list(dag_id="d")
        active = s.scalars(select(ReservationRow).where(ReservationRow.active.is_(True))).all()
    assert len(rows) == 48 and active == []
    assert Counter(r.state for r in rows).keys() <= {"released", "cancelled"}


def test_a_reservation_whose_pod_the_cluster_shows_keeps_its_lease(db):
    t0 = now()
    out = place(db, submit("train", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), when=t0)
    later = t0 + POLICY.lease + timedelta(minutes=5)
    with db() as s:  # the task is deferred (nobody renews), but its pod runs and the sync sees it
        StatusStore(s).record(observe(FLEET.cluster("cloud-h100"), at=later, seen=[out.reservation_id]))
        PlacementStore(s, POLICY).run_cycle(later)
        assert PlacementStore(s, POLICY).get(out.id).state == PlacementState.ADMITTED.value


def test_a_reservation_whose_pod_waits_for_a_node_keeps_its_lease_and_its_capacity(db):
    """The cluster holds the pod but its scheduler has not bound it: the grant is in use (renewed by
    sight), and no node counts it yet, so the next request may not have its GPUs."""
    t0 = now()
    h100 = FLEET.cluster("cloud-h100")
    h100_gpus = sum(p.gpus_per_node * p.nodes for p in h100.node_pools if p.gpu_type == "NVIDIA-H100-80GB-HBM3")
    first = place(db, submit("train", gpus=h100_gpus, gpu_types=["NVIDIA-H100-80GB-HBM3"]), when=t0)
    assert first.cluster == "cloud-h100"
    later = t0 + POLICY.lease + timedelta(minutes=5)
    with db() as s:
        StatusStore(s).record(observe(h100, at=later, waiting=[first.reservation_id]))
    with db() as s:
        assert StatusStore(s).all()["cloud-h100"].observation.reservation_ids_waiting == {first.reservation_id}
    second = place(db, submit("next", gpus=h100_gpus, gpu_types=["NVIDIA-H100-80GB-HBM3"]), when=later)
    with db() as s:
        assert PlacementStore(s, POLICY).get(first.id).state == PlacementState.ADMITTED.value
    assert second.state is PlacementState.PENDING
    why = {(r.cluster, r.pool): r.reason for r in second.explanation.rejections}
    assert why[("cloud-h100", "h100-spot")] == "InsufficientFreeGpus"


def test_handover_lets_a_downstream_task_hold_the_reservation(db):
    out = place(db, submit("wait_for_gpus", gpus=1))
    with db() as s:
        row = PlacementStore(s, POLICY).handover(out.id, "train", now(), "test")
        assert row.holder_task_id == "train"


def test_a_page_of_placements_reads_what_they_share_once(db):
    """Listing reads the page's reservations in one query and each cluster and list of rejections
    once, however many placements name them (read per row, 1,000 placements took 2-3 s)."""
    from sqlalchemy import event

    for i in range(6):
        place(db, submit(f"t{i}", gpus=1))
    with db() as s:
        store = PlacementStore(s, POLICY)
        rows = store.list()
        one_by_one = [store.out(r) for r in rows]
        s.expunge_all()
        rows = store.list()
        clusters = {r.cluster for r in rows if r.cluster}
        statements: list[str] = []
        listen = (s.get_bind(), "before_cursor_execute")
        record = lambda *args: statements.append(args[2])  # noqa: E731
        event.listen(*listen, record)
        try:
            together = store.outs(rows)
        finally:
            event.remove(*listen, record)
    assert together == one_by_one
    assert len(rows) == 6 and len({r.rejections_digest for r in rows}) < 6
    assert len(statements) <= 1 + len(clusters) + 1  # reservations, each cluster's profile, the lists


def test_a_reservation_is_made_alike_from_a_loaded_an_expired_and_a_renewed_row(db):
    """`reservation_of` reads a loaded row's values without the ORM's descriptors: a row whose
    columns a commit expired is read through the ORM instead, and a lease renewed in the session
    is the value read."""
    from airflow_mcsched.service.placement_mapping import reservation_of

    place(db, submit("train", gpus=2))
    with db() as s:
        row = s.scalars(select(ReservationRow)).one()
        loaded = reservation_of(row)
        assert loaded.id == row.id and loaded.pods and loaded.gpu_equivalent == 2
        s.expire(row)
        assert "expires_at" not in row.__dict__
        assert reservation_of(row) == loaded
        later = row.expires_at + timedelta(minutes=5)
        row.expires_at = later
        renewed = reservation_of(row)
        assert renewed.expires_at == later and renewed != loaded
        assert renewed == dataclasses.replace(loaded, expires_at=later)


def test_a_reservations_row_keeps_the_gpus_its_pods_were_given(db):
    """The node chooser names the GPUs each pod holds, so that giving them back frees those GPUs
    (a share of one GPU, above all): the row keeps them, and a reservation read back from it is
    the one granted. A row written without them (before session 28) reads with none: given back
    by amount."""
    from airflow_mcsched.service.placement_mapping import reservation_of, reservation_row

    place(db, submit("train", gpus=2))
    with db() as s:
        row = s.scalars(select(ReservationRow)).one()
        (pod,) = row.pods
        assert len(pod["gpu_indices"]) == len(set(pod["gpu_indices"])) == 2
        granted = reservation_of(row)
        assert granted.pods[0].gpu_indices == tuple(pod["gpu_indices"])
        assert reservation_of(reservation_row(granted)) == granted
        s.expunge(row)
    old = reservation_row(granted)
    old.pods = [{k: v for k, v in p.items() if k != "gpu_indices"} for p in old.pods]
    assert reservation_of(old) == dataclasses.replace(
        granted, pods=tuple(dataclasses.replace(p, gpu_indices=()) for p in granted.pods)
    )


def test_a_cycle_makes_orm_rows_of_the_pending_placements_and_of_what_it_ends_alone(db):
    """A cycle locks every placement that holds capacity and its reservation with the pending ones,
    but makes ORM rows only of the pending placements (their request and explanation read) and of
    the few rows it changes: on a full fleet the others are tens of thousands of rows. A placement
    still waiting for the same reasons keeps its first explanation; a lease that ends is ended in
    its rows, read when the cycle ends it."""
    from sqlalchemy import event

    from airflow_mcsched.service.tables import PlacementRow

    h100 = ["NVIDIA-H100-80GB-HBM3"]
    t0 = now()
    held = place(db, submit("a", gpus=8, gpu_types=h100), when=t0)
    waiting = place(db, submit("b", gpus=8, gpu_types=h100), when=t0)
    assert held.state is PlacementState.ADMITTED and waiting.state is PlacementState.PENDING

    def cycle(at: datetime) -> list:
        with db() as s:
            loaded: list = []  # held here: the session keeps its rows by weak reference
            event.listen(s, "loaded_as_persistent", lambda _, row: loaded.append(row))
            PlacementStore(s, POLICY).run_cycle(at)
            s.commit()
            placements = (PlacementRow, ReservationRow)  # not the audit's rows, say
            return [(type(r).__name__, r.id, dict(r.__dict__)) for r in loaded if isinstance(r, placements)]

    loaded = cycle(t0 + timedelta(seconds=5))
    assert [(kind, id_) for kind, id_, _ in loaded] == [("PlacementRow", waiting.id)]
    assert {"request", "explanation"} <= loaded[0][2].keys()
    with db() as s:
        again = PlacementStore(s, POLICY).out(PlacementStore(s, POLICY).get(waiting.id))
    assert again.explanation == waiting.explanation  # same reasons: the first explanation kept

    later = t0 + POLICY.lease + timedelta(seconds=1)
    with db() as s:
        StatusStore(s).record(observe(FLEET.cluster("cloud-h100"), at=later))  # a fresh read: no pod showed up
    loaded = cycle(later)
    assert sorted((kind, id_) for kind, id_, _ in loaded) == sorted(
        [("PlacementRow", waiting.id), ("PlacementRow", held.id), ("ReservationRow", held.reservation_id)]
    )
    with db() as s:
        store = PlacementStore(s, POLICY)
        assert store.get(held.id).state == PlacementState.EXPIRED.value
        assert store.get(waiting.id).state == PlacementState.ADMITTED.value
        assert not s.get(ReservationRow, held.reservation_id).active


def test_a_lease_renewed_by_sight_is_written_and_a_cycle_that_sees_nothing_new_writes_none(db):
    """Leases renewed by the cluster's sight of the pod are written to their rows (in a statement per
    page of rows); a reservation the cycle before renewed to the same end is not written again."""
    from sqlalchemy import event

    t0 = now()
    out = place(db, submit("train", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), when=t0)
    later = t0 + POLICY.lease + timedelta(minutes=5)
    with db() as s:
        StatusStore(s).record(observe(FLEET.cluster("cloud-h100"), at=later, seen=[out.reservation_id]))
    for expected_updates in (1, 0):
        with db() as s:
            statements: list[str] = []
            record = lambda *args, into=statements: into.append(args[2])  # noqa: E731
            event.listen(s.get_bind(), "before_cursor_execute", record)
            try:
                PlacementStore(s, POLICY).run_cycle(later)
                s.commit()
            finally:
                event.remove(s.get_bind(), "before_cursor_execute", record)
        assert sum(q.lstrip().upper().startswith("UPDATE MCSCHED_RESERVATION") for q in statements) == expected_updates
        with db() as s:
            assert s.get(ReservationRow, out.reservation_id).expires_at == later + POLICY.lease
            assert PlacementStore(s, POLICY).get(out.id).state == PlacementState.ADMITTED.value
