"""Store operations run by hand or from cron: `compact` (merge near-duplicates that raced in) and `migrate`
(copy a store to a Chroma server and back).

May import: automem.extract, automem.core and everything below them. Not automem.hermes or automem.cli.
"""
