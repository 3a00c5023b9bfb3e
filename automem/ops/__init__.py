"""Store operations run by hand or from cron: `compact` (merge near-duplicates that raced in), `migrate`
(copy a store to a Chroma server and back), `transfer` (export and import as JSON lines) and `jsonl` (reading the
user's JSON input with bounds).

May import: automem.extract, automem.core and everything below them. Not automem.hermes or automem.cli.
"""
