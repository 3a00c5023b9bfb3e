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


class NotFound(UsageError):
    """No memory (or held memory) with the id given. The message names the id and where to look it up."""


class Refused(UsageError):
    """automem would not do it: a text the write path refuses (a secret, personal data, too short or too long), an
    instruction that may not be shared. `decision` / `result` carry the details when there are any."""

    def __init__(self, message: str, *, decision: object = None, result: object = None):
        super().__init__(message)
        self.decision = decision
        self.result = result


class AutomemWarning(UserWarning):
    """Something worked, but not as well as it could: a config setting ignored, the LLM judge unreachable (the
    offline rules decided). The Python API reports these through `warnings`; the CLI prints them on stderr."""
