"""Virtual clusters: local servers speaking the part of the Kubernetes API airflow-mcsched uses.

One server per cluster of a fleet file, with a bin-packing scheduler and a kubelet that runs
containers as timers or local processes. Start them with `fleet.VirtualFleet` (tests) or
`mcsched virtual-clusters up` (CLI); docs/virtual-clusters.md says what is and is not emulated.
Kept import-light: nothing is imported here.
"""
