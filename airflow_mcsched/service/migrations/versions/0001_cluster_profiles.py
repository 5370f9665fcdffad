"""Cluster profiles and their node pools.

Revision ID: 0001_cluster_profiles
Revises:
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from airflow_mcsched.service.tables import UtcDateTime

revision = "0001_cluster_profiles"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcsched_cluster",
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("region", sa.String(128), nullable=False),
        sa.Column("zone", sa.String(128), nullable=False),
        sa.Column("failure_domain", sa.String(256), nullable=False),
        sa.Column("connection_id", sa.String(250), nullable=False),
        sa.Column("namespace", sa.String(63), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_mcsched_cluster"),
    )
    op.create_index("ix_mcsched_cluster_state", "mcsched_cluster", ["state"])
    op.create_table(
        "mcsched_node_pool",
        sa.Column("cluster_name", sa.String(63), nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("gpu_type", sa.String(128), nullable=True),
        sa.Column("gpus_per_node", sa.Integer(), nullable=False),
        sa.Column("nodes", sa.Integer(), nullable=False),
        sa.Column("price_per_gpu_hour", sa.Float(), nullable=False),
        sa.Column("spot_price_per_gpu_hour", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_name"],
            ["mcsched_cluster.name"],
            name="fk_mcsched_node_pool_cluster_name_mcsched_cluster",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_name", "name", name="pk_mcsched_node_pool"),
    )
    op.create_index("ix_mcsched_node_pool_gpu_type", "mcsched_node_pool", ["gpu_type"])


def downgrade() -> None:
    op.drop_table("mcsched_node_pool")
    op.drop_table("mcsched_cluster")
