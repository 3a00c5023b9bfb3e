"""Errors that carry a one-line message telling the user what to do."""

from __future__ import annotations


class AutomemError(Exception):
    """Base class. `str(err)` is a one-line message fit for stderr."""

    exit_code = 1


class UsageError(AutomemError):
    """Bad input or usage: the CLI exits with 2."""

    exit_code = 2


class ConfigError(UsageError):
    """config.yaml (or an AUTOMEM_* variable) cannot be used."""


class StoreError(AutomemError):
    """The memory store cannot be opened or written."""


class StoreUnavailable(StoreError):
    """The Chroma server does not answer (down, unreachable, hung, overloaded): the same call may succeed later, so
    work waiting on it is kept and retried (queued extraction jobs, `automem add`)."""


class LLMError(AutomemError):
    """The extraction LLM failed; `retryable` says whether a later attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable
