"""The test tiers' rule, checked where the slow things start (docs/testing.md).

A test that starts the real `hermes` CLI must be marked `e2e`, and one that starts a Chroma server `server`: both
stay out of the default tier (`scripts/test.sh`), which runs `-m "not (slow or e2e or server)"`. conftest.py sets
`current` to the running test's marker names; outside pytest (a script using these helpers) nothing is checked.
"""

from __future__ import annotations

current: frozenset[str] | None = None


def require(marker: str, what: str) -> None:
    """Fail the running test when it starts `what` without `@pytest.mark.<marker>`."""
    if current is not None and marker not in current:
        raise AssertionError(f"this test starts {what} but is not marked @pytest.mark.{marker}: mark it (or its "
                             f"module: pytestmark = pytest.mark.{marker}) so the default tier leaves it out; "
                             f"see docs/testing.md")
