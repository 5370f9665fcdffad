"""Governance (layer 4), pure Python: cost, utilisation, waiting, quota use, capacity, forecast, reclaim.

Every function here takes recorded lineage or a view snapshot and the time, and returns typed
reports; the service and the CLI load the inputs and format the outputs. No I/O.
"""
