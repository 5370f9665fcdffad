"""Drop-in shim: copy this file into $AIRFLOW_HOME/plugins when the package is installed but its
entry point is not wanted (or not seen). Do not use both, or Airflow reports the plugin twice."""

from airflow_mcsched.plugin import MultiClusterSchedulingPlugin

__all__ = ["MultiClusterSchedulingPlugin"]
