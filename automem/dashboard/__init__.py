"""The Memory tab of `hermes dashboard`: the backend its page calls (`routes`, a FastAPI router mounted by the
plugin's `hooks/automem/dashboard/plugin_api.py` shim), the checks on every request (`queries`) and the one module
that calls into automem (`adapter`), so that swapping in the typed public API is a one-file change. A layer at the
top, beside the CLI: the same public functions, no write path or visibility rule of its own.

May import: automem.hermes, automem.ops, automem.extract, automem.core and everything below them. Not automem.cli.
FastAPI is the dashboard's own (Hermes ships it); only `routes` imports it.
"""
