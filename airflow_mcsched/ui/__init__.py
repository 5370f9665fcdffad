"""The pages shown inside the Airflow UI (Fleet, Placements, Cost), served by the placement service.

`nav` is import-light (the plugin reads it in every Airflow component); `pages.install_pages` adds
the routes to the service's app in the API server.
"""
