"""Rejection lists kept once, named by digest from each placement that gives them.

Rows decided before this revision keep their rejections inline in `explanation` and are read as
they are; the next decision on such a row moves them out. A downgrade puts every list back inline.

Revision ID: 0005_rejection_lists
Revises: 0004_cluster_breaker
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

from airflow_mcsched.service.tables import UtcDateTime

revision = "0005_rejection_lists"
down_revision = "0004_cluster_breaker"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcsched_rejection_list",
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("rejections", sa.JSON(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_mcsched_rejection_list"),
    )
    with op.batch_alter_table("mcsched_placement") as batch:
        batch.add_column(sa.Column("rejections_digest", sa.String(64), nullable=True))
        batch.create_index("ix_mcsched_placement_rejections_digest", ["rejections_digest"])


def downgrade() -> None:
    placements = sa.table(
        "mcsched_placement",
        sa.column("id", sa.String),
        sa.column("explanation", sa.JSON),
        sa.column("rejections_digest", sa.String),
    )
    lists = sa.table("mcsched_rejection_list", sa.column("digest", sa.String), sa.column("rejections", sa.JSON))
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(placements.c.id, placements.c.explanation, lists.c.rejections).join(
            lists, lists.c.digest == placements.c.rejections_digest
        )
    ).all()
    for placement_id, explanation, rejections in rows:  # back inline, as revision 0004 reads them
        bind.execute(
            placements.update()
            .where(placements.c.id == placement_id)
            .values(explanation={**(explanation or {}), "rejections": rejections})
        )
    with op.batch_alter_table("mcsched_placement") as batch:
        batch.drop_index("ix_mcsched_placement_rejections_digest")
        batch.drop_column("rejections_digest")
    op.drop_table("mcsched_rejection_list")
