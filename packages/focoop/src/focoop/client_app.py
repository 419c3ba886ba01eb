"""Flower ``ClientApp`` of FOCoOp (``focoop.client_app:app``); see :mod:`focoop.flower`.

Deploy like any Flower app, e.g. in a ``pyproject.toml``::

    [tool.flwr.app.components]
    serverapp = "focoop.server_app:app"
    clientapp = "focoop.client_app:app"

    [tool.flwr.app.config]
    setup-path = "federation.safetensors"       # written by `focoop prepare` / FederationSetup.save
    focoop-config = '{"method": "focoop", "n_clients": 10, "rounds": 10}'
"""

from focoop.flower import make_client_app

app = make_client_app()
