"""airflow-mcsched: one pool of GPUs over many Kubernetes clusters, for Airflow DAGs.

Kept import-light: every Airflow component imports the plugin module.
"""

__version__ = "0.1.0"
