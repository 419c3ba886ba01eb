"""Flower ``ServerApp`` of FOCoOp (``focoop.server_app:app``); see :mod:`focoop.flower` and :mod:`focoop.client_app`."""

from focoop.flower import make_server_app

app = make_server_app()
