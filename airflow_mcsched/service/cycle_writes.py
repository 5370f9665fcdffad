"""What an admission cycle writes, in a few statements rather than one per row.

A cycle of 1,000 pending requests changes most of their rows, grants hundreds of reservations and
audits each grant. Set on ORM objects, those changes reached the database as some 540 UPDATE
statements (the unit of work batches rows only while they follow each other in primary-key order
with the same changed columns, and admitted rows, waiting rows and rows whose GPU type stays empty
interleave), each row's explanation encoded whole, rejections and all (some 25 KB a row at 100
clusters). Writing was three quarters of a cycle on SQLite and 85 % on PostgreSQL
(benchmarks/bench_service_cycle.py). Here:

- each list of rejections is written once, under its digest, and only if the database does not
  hold it yet (`mcsched_rejection_list`); a list no placement names any more is dropped;
- each kind of placement change is one statement: an executemany on SQLite (in process, where a
  statement per row costs little), and on PostgreSQL pages of rows handed over as one JSON array
  (`json_to_recordset`), since psycopg2 sends an executemany as a round trip per row;
- each explanation goes in as the JSON text already made for it (stored_explanations.py);
- new rows are inserted from plain values, not ORM objects.

The session stays right: what it held is flushed first (so earlier changes keep their order), and
each updated object is given its new values as committed ones, so reading it later in the
transaction sees what was written without asking the database again.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ColumnElement, Text, bindparam, cast, delete, exists, insert, select, text, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from airflow_mcsched.service.stored_explanations import RejectionList, StoredExplanation
from airflow_mcsched.service.tables import Base, PlacementRow, RejectionListRow, UtcDateTime, in_pages, utcnow

_PLACEMENTS = PlacementRow.__table__
_LISTS = RejectionListRow.__table__
_dumps = json.dumps


class CycleWrites:
    """Changes to placement rows and new rows of other tables, held until `write`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._dialect = session.get_bind().dialect
        self._postgres = self._dialect.name == "postgresql"
        # by the columns changed (an executemany statement sets the same ones in every row)
        self._updates: dict[tuple[str, ...], list[tuple[PlacementRow, dict[str, Any], StoredExplanation]]] = {}
        self._inserts: dict[type[Base], list[dict[str, Any]]] = {}

    def update(self, row: PlacementRow, values: dict[str, Any], explanation: StoredExplanation) -> None:
        """Set `values` (column names) and the explanation, with its list of rejections, on a row."""
        self._updates.setdefault(tuple(values), []).append((row, values, explanation))

    def insert(self, table: type[Base], values: dict[str, Any]) -> None:
        """A new row; rows of one table go in with the same columns given."""
        self._inserts.setdefault(table, []).append(values)

    def write(self) -> None:
        session = self.session
        session.flush()  # what the session holds goes first, in the order it was made
        updates = [u for rows in self._updates.values() for u in rows]
        self._keep_lists({stored.rejections.digest: stored.rejections for _, _, stored in updates})
        replaced = {row.rejections_digest for row, _, stored in updates} - {None}
        for columns, rows in self._updates.items():
            params = [
                {
                    "id": row.id,
                    "explanation": stored.text,
                    "rejections_digest": stored.rejections.digest,
                    **values,
                }
                for row, values, stored in rows
            ]
            self._update_placements((*columns, "rejections_digest"), params)
            for row, values, stored in rows:
                for c, v in values.items():
                    set_committed_value(row, c, v)
                set_committed_value(row, "explanation", stored.value)
                set_committed_value(row, "rejections_digest", stored.rejections.digest)
        self._drop_unnamed(replaced)
        for table, values in self._inserts.items():
            # the table's, not the ORM's bulk insert: that one leaves out None values and splits
            # the rows into a statement per set of columns given
            session.execute(insert(table.__table__), values)
        self._updates.clear()
        self._inserts.clear()

    def _update_placements(self, columns: tuple[str, ...], params: list[dict[str, Any]]) -> None:
        """Set `columns` and the explanation (JSON text) of each row `params` gives by id."""
        if self._postgres:
            self._update_from_json_rows(columns, params)
            return
        table = _PLACEMENTS
        statement = (
            update(table)
            .where(table.c.id == bindparam("v_id"))
            .values(
                {
                    **{c: bindparam(f"v_{c}", type_=table.c[c].type) for c in columns},
                    "explanation": self._json_text("v_explanation"),
                }
            )
        )
        self.session.execute(statement, [{f"v_{k}": v for k, v in p.items()} for p in params])

    def _update_from_json_rows(self, columns: tuple[str, ...], params: list[dict[str, Any]]) -> None:
        """PostgreSQL: pages of rows handed over as one JSON array each, read back into typed
        columns by `json_to_recordset`. One parameter, so the statement does not grow with the
        rows (a VALUES list of bound parameters cost as much to compile as it saved in round
        trips), and each explanation goes into the array as the text already made for it."""
        table = _PLACEMENTS
        names = ("id", *columns)
        record = ", ".join(f"{c} {table.c[c].type.compile(dialect=self._dialect)}" for c in names)
        statement = text(
            f"UPDATE {table.name} AS p SET {', '.join(f'{c} = v.{c}' for c in (*columns, 'explanation'))} "
            f"FROM json_to_recordset(CAST(:rows AS JSON)) AS v({record}, explanation JSON) WHERE p.id = v.id"
        )
        for page in in_pages(params):
            rows = ", ".join(
                f'{_dumps({c: p[c] for c in names}, default=_iso)[:-1]}, "explanation": {p["explanation"]}}}'
                for p in page
            )
            self.session.execute(statement, {"rows": f"[{rows}]"})

    def _json_text(self, name: str) -> ColumnElement[Any]:
        """A parameter holding JSON text for a JSON column: as it is, or cast on PostgreSQL (where
        json is a type of its own; elsewhere the column keeps text)."""
        param = bindparam(name, type_=Text())
        return cast(param, JSON) if self._postgres else param

    def _keep_lists(self, lists: dict[str, RejectionList]) -> None:
        """Add the lists of rejections the database does not hold yet."""
        digests = sorted(lists)
        held: set[str] = set()
        for page in in_pages(digests):
            held.update(self.session.scalars(select(_LISTS.c.digest).where(_LISTS.c.digest.in_(page))))
        new = [d for d in digests if d not in held]
        if not new:
            return
        statement = insert(_LISTS).values(
            digest=bindparam("v_digest"),
            rejections=self._json_text("v_rejections"),
            created_at=bindparam("v_created_at", type_=UtcDateTime()),
        )
        now = utcnow()
        self.session.execute(
            statement, [{"v_digest": d, "v_rejections": lists[d].text, "v_created_at": now} for d in new]
        )

    def _drop_unnamed(self, digests: set[str]) -> None:
        """Drop the lists, among those the updated rows named before, that no placement names now."""
        named = exists().where(_PLACEMENTS.c.rejections_digest == _LISTS.c.digest)
        for page in in_pages(sorted(digests)):
            self.session.execute(delete(_LISTS).where(_LISTS.c.digest.in_(page), ~named))


def _iso(value: object) -> str:
    """Timestamps in the rows' JSON (PostgreSQL reads them back as timestamptz); a naive one is
    refused, as `UtcDateTime` refuses it on every other path."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; pass an aware datetime")
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} has no JSON form here")
