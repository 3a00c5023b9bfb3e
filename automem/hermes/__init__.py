"""The Hermes side: what one Hermes agent session does with automem (recall, extraction triggers, tools, the
built-in memory mirror), installing the plugin into profiles, config.yaml edits, and kanban task memory. It imports
no Hermes module: the plugin in hooks/automem is the thin adapter that calls into it.

May import: automem.extract, automem.core and everything below them. Not automem.ops or automem.cli.
"""
