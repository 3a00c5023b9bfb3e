"""automem for Hermes Agent 0.19: the thin adapter from Hermes events to automem's core (`automem.hermes.session`).

Hermes imports this file twice in one process, in two roles that share no module globals:
- memory provider `automem` (module `_hermes_user_memory.automem`; `register(ctx)` gets a collector that keeps
  only register_memory_provider): recall in the system prompt and per turn, extraction at session end and before
  context compression, the mirror of the built-in memory tool, and the automem_* tools as provider tools;
- general plugin (module `hermes_plugins.automem`, a real PluginContext; `kind: standalone` in plugin.yaml is what
  makes Hermes load it in this role too, since this file names the MemoryProvider class): the same tools as
  registry tools, and, when another memory provider is active (then the provider role never runs),
  `on_session_finalize`, which extracts the session from state.db, and `pre_llm_call`, which recalls.

Why the tools are registered in both roles: provider tools exist only when `memory.provider: automem`; registry
tools exist only when the plugin is in `plugins.enabled`. With both (what `automem install` sets), Hermes routes a
call to the provider first (tool_executor checks the memory manager before the registry) and lists the tool once.

Every entry point is guarded: nothing raises into Hermes; a failure is one line in <root>/automem/logs/automem.log.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

try:
    from agent.memory_provider import MemoryProvider
except ImportError:  # outside Hermes (the core never needs this file)
    MemoryProvider = object  # type: ignore[assignment,misc]


def _log_failure(where: str, exc: BaseException, hermes_home: str | None = None) -> None:
    try:
        from automem.log import log_event
        from automem.paths import Location

        log_event(Location.resolve(hermes_home), "hook_failed", hook=where,
                  error=f"{exc.__class__.__name__}: {exc}"[:500])
    except Exception:  # noqa: BLE001 - logging must never be what breaks Hermes
        pass


def _guarded(default: Any = None) -> Callable:
    """Run the hook; on any exception log one line and return `default`."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                self = args[0] if args and isinstance(args[0], AutomemProvider) else None
                home = getattr(self, "_home", None) or kwargs.get("hermes_home")
                _log_failure(fn.__name__, exc, home)
                return default() if callable(default) else default

        return run

    return wrap


def _hermes_home() -> str | None:
    try:
        from hermes_constants import get_hermes_home

        return str(get_hermes_home())
    except Exception:  # noqa: BLE001
        return os.environ.get("HERMES_HOME")


# The identity kwargs the gateway passes to `initialize` (Hermes 0.19, agent/agent_init.py).
GATEWAY_KWARGS = ("user_id", "user_id_alt", "user_name", "chat_id", "chat_name", "chat_type", "thread_id",
                  "gateway_session_key")


class AutomemProvider(MemoryProvider):
    """The memory provider `automem`: each method hands over to automem.hermes.session.HermesSession."""

    def __init__(self) -> None:
        self._session = None
        self._home: str | None = None  # where failures are logged, known before anything can fail

    @property
    def name(self) -> str:
        return "automem"

    def is_available(self) -> bool:
        try:
            import automem  # noqa: F401 - cheap: the package imports nothing heavy
        except ImportError:
            return False
        return True

    @_guarded()
    def initialize(self, session_id: str, **kwargs) -> None:
        self._home = kwargs.get("hermes_home") or _hermes_home()
        from automem.hermes.session import HermesSession, mark_active

        gateway = {k: kwargs.get(k) for k in GATEWAY_KWARGS if kwargs.get(k) not in (None, "")}
        self._session = HermesSession.start(self._home, session_id=session_id or "",
                                            platform=kwargs.get("platform") or "cli",
                                            agent_context=kwargs.get("agent_context") or "primary",
                                            gateway=gateway)
        mark_active(self._session, True)  # automem's modules are shared by both roles; this module's are not

    @_guarded(default="")
    def system_prompt_block(self) -> str:
        return self._session.system_prompt_block() if self._session else ""

    @_guarded(default="")
    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return self._session.prefetch(query) if self._session else ""

    @_guarded()
    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        if self._session:
            self._session.queue_prefetch(query)

    @_guarded()
    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: Any = None) -> None:
        """After every turn (Hermes runs it on a background worker): extract the conversation in windows as it
        goes, so a gateway chat that never ends is remembered too."""
        if not self._session:
            return
        if session_id and session_id != self._session.session_id:
            self._session.on_session_switch(session_id)
        if isinstance(messages, list):
            self._session.on_turn(messages)

    @_guarded(default=list)
    def get_tool_schemas(self) -> list:
        from automem.hermes.session import TOOL_SCHEMAS

        return [dict(s) for s in TOOL_SCHEMAS]

    def handle_tool_call(self, tool_name: str, args: dict, **kwargs) -> str:
        try:
            if self._session is None:
                return '{"error": "automem is not initialised in this session"}'
            return self._session.handle_tool(tool_name, args)
        except Exception as exc:  # noqa: BLE001
            _log_failure("handle_tool_call", exc, self._home)
            return '{"error": "automem tool failed; see <root>/automem/logs/automem.log"}'

    @_guarded()
    def on_session_end(self, messages: list) -> None:
        if self._session:
            self._session.on_session_end(messages or [])

    @_guarded(default="")
    def on_pre_compress(self, messages: list) -> str:
        return self._session.on_pre_compress(messages or []) if self._session else ""

    @_guarded()
    def on_session_switch(self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False,
                          rewound: bool = False, **kwargs) -> None:
        if self._session:
            self._session.on_session_switch(new_session_id, reset=reset, parent_session_id=parent_session_id or "")

    @_guarded()
    def on_memory_write(self, action: str, target: str, content: str, metadata: dict | None = None) -> None:
        if self._session:
            self._session.on_memory_write(action, target, content, metadata)

    @_guarded()
    def shutdown(self) -> None:
        if self._session:
            from automem.hermes.session import mark_active

            self._session.shutdown()
            mark_active(self._session, False)

    # -- `hermes memory setup` / `status` and the dashboard (settings live in config.yaml's `automem:` section) --
    def get_config_schema(self) -> list:
        try:
            from automem.hermes.setup import config_schema
        except ImportError:  # Hermes' installer brings automem in (plugin.yaml pip_dependencies)
            return []
        return config_schema()

    def save_config(self, values: dict, hermes_home: str) -> None:
        """Write the values to the `automem:` section (comments kept; a secret goes to .env, not config.yaml)."""
        try:
            from automem.errors import AutomemError
            from automem.hermes.setup import save_settings
        except ImportError as exc:
            raise ValueError(f"{sys.executable} cannot import automem ({exc}): pip install automem") from None
        try:
            save_settings(dict(values or {}), hermes_home)
        except AutomemError as exc:
            raise ValueError(str(exc)) from None  # the wizard prints it; the dashboard answers 400

    def post_setup(self, hermes_home: str, config: dict) -> None:
        """`hermes memory setup automem`: Hermes hands the whole flow here. Ask the schema's questions, save them,
        install into this profile (plugin enabled, skill copied, provider set), end with doctor's verdict."""
        try:
            setup = _import_setup()
        except ImportError as exc:
            print(f"\n  ✗ this Python ({sys.executable}) cannot import automem ({exc}); run:\n"
                  f"    {sys.executable} -m pip install automem\n  then `hermes memory setup automem` again.\n")
            return
        try:
            setup.run_setup(hermes_home, _hermes_prompts(setup))
        except Exception as exc:  # noqa: BLE001 - one clear line, never a traceback into Hermes' wizard
            _log_failure("post_setup", exc, hermes_home)
            print(f"\n  ✗ automem setup failed: {exc.__class__.__name__}: {exc}\n"
                  f"    `automem install` does the same without questions; `automem doctor` tells what is wrong.\n")

    def get_status_config(self, provider_config: dict) -> dict:
        """`hermes memory status`: automem's settings and state, from files only (no chromadb, no model)."""
        try:
            from automem.hermes.status import status_config

            return status_config(_hermes_home())
        except Exception as exc:  # noqa: BLE001
            _log_failure("get_status_config", exc, _hermes_home())
            return {"status": f"unavailable ({exc.__class__.__name__}: {exc}); run `automem doctor`"}

    def backup_paths(self) -> list:
        return []  # everything lives under the Hermes root (<root>/automem/)


def _import_setup():
    """automem.hermes.setup, also right after Hermes' installer pip-installed automem into this process's Python
    (the import system's directory caches predate that install)."""
    try:
        import automem.hermes.setup as setup
    except ImportError:
        import importlib

        importlib.invalidate_caches()
        import automem.hermes.setup as setup
    return setup


def _hermes_prompts(setup):
    """The wizard's questions asked with Hermes' own picker and prompts (hermes_cli.memory_setup, 0.19), so they
    look like every other provider's; automem's plain prompts where those are missing."""
    try:
        from hermes_cli.memory_setup import _curses_select, _prompt
    except ImportError:
        return setup.Prompts()

    def choose(title, options, default):
        index = _curses_select(f"  {title}", options, default=default, cancel_returns=-1)
        return None if index < 0 else index

    return setup.Prompts(choose=choose, text=lambda label, default: _prompt(label, default=default or None),
                         secret=lambda label: _prompt(label, secret=True))


# -- general-plugin role ---------------------------------------------------------------------------------------
def _on_session_finalize(session_id: str = "", platform: str = "", reason: str = "", **kwargs) -> None:
    try:
        from automem.hermes.session import finalize_fallback

        if not session_id:
            return
        # per session: skipped when a provider of this process holds it (it extracts in its on_session_end)
        finalize_fallback(_hermes_home(), session_id, reason=reason or "", platform=platform or "")
    except Exception as exc:  # noqa: BLE001
        _log_failure("on_session_finalize", exc, _hermes_home())


def _fallback_recall(session_id: str = "", user_message: str = "", is_first_turn: bool = False,
                     **kwargs) -> dict | None:
    """Recall when another memory provider is active (the provider role then never runs)."""
    try:
        from automem.hermes.session import fallback_recall, provider_active

        if provider_active():
            return None  # the provider's system_prompt_block and prefetch already recall
        text = fallback_recall(_hermes_home(), session_id, user_message if isinstance(user_message, str) else "",
                               bool(is_first_turn))
        return {"context": text} if text else None
    except Exception as exc:  # noqa: BLE001
        _log_failure("pre_llm_call", exc, _hermes_home())
        return None


def _tool_handler(name: str) -> Callable:
    def handle(args: dict, **kwargs) -> str:
        try:
            from automem.hermes.session import run_tool_in_home

            return run_tool_in_home(_hermes_home(), name, args, session_id=str(kwargs.get("session_id") or ""))
        except Exception as exc:  # noqa: BLE001
            _log_failure(name, exc, _hermes_home())
            return '{"error": "automem tool failed; see <root>/automem/logs/automem.log"}'

    handle.__name__ = f"handle_{name}"
    return handle


def _offer_host_llm(ctx) -> None:
    """Let extraction use the host's model (extract_backend hermes/auto) in this process. `ctx.llm` is built on
    the first call, not here: nothing on Hermes' start path."""
    try:
        from automem.extract.llm import register_host_llm
        from automem.paths import Location

        def complete(*args, **kwargs):
            return ctx.llm.complete(*args, **kwargs)

        register_host_llm(Location.resolve(_hermes_home()).profile, complete)
    except Exception as exc:  # noqa: BLE001 - extraction falls back to the other backends
        _log_failure("register_host_llm", exc, _hermes_home())


# -- kanban (issue 5): each handler hands over to automem.hermes.kanban, whose entry points never raise ----------
def _kanban_worker_start() -> None:
    if not os.environ.get("HERMES_KANBAN_TASK"):
        return  # not a kanban worker: keep automem.hermes.kanban off the start path of every other `hermes` run
    try:
        from automem.hermes.kanban import hook_worker_start

        hook_worker_start(_hermes_home())  # in a worker: start the first-turn recall while Hermes boots
    except Exception as exc:  # noqa: BLE001
        _log_failure("kanban_worker_start", exc, _hermes_home())


def _kanban_first_turn_recall(is_first_turn: bool = False, **kwargs) -> dict | None:
    if not is_first_turn or not os.environ.get("HERMES_KANBAN_TASK"):
        return None
    try:
        from automem.hermes.kanban import hook_first_turn

        return hook_first_turn(_hermes_home(), is_first_turn=bool(is_first_turn))
    except Exception as exc:  # noqa: BLE001
        _log_failure("kanban_first_turn_recall", exc, _hermes_home())
        return None


def _kanban_task_ended(event: str) -> Callable:
    def handle(**kwargs) -> None:
        try:
            from automem.hermes.kanban import hook_task_ended

            hook_task_ended(event, _hermes_home(), **kwargs)
        except Exception as exc:  # noqa: BLE001
            _log_failure(event, exc, _hermes_home())

    handle.__name__ = f"_on_{event}"
    return handle


def register(ctx) -> None:
    """Both roles call this. The memory-provider loader passes a collector (no `manifest`) that keeps only the
    provider; the plugin manager passes a PluginContext (with `manifest`) for tools and hooks."""
    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(AutomemProvider())
    if not hasattr(ctx, "manifest") or not hasattr(ctx, "register_hook"):
        return  # the provider role: nothing else here would be kept, and nothing should run twice
    try:
        from automem.hermes.session import TOOL_SCHEMAS
    except ImportError:  # Hermes' Python cannot import automem: `automem doctor` says how to fix it
        return

    for schema in TOOL_SCHEMAS:
        try:
            ctx.register_tool(name=schema["name"], toolset="automem", schema=dict(schema),
                              handler=_tool_handler(schema["name"]), description=schema["description"], emoji="🧠")
        except Exception as exc:  # noqa: BLE001 - e.g. a name clash; the provider tools still work
            _log_failure(f"register_tool:{schema['name']}", exc, _hermes_home())
    ctx.register_hook("on_session_finalize", _on_session_finalize)
    ctx.register_hook("pre_llm_call", _fallback_recall)
    _offer_host_llm(ctx)

    # ---- kanban hooks (issue 5): thin handlers that only call automem.hermes.kanban
    ctx.register_hook("kanban_task_completed", _kanban_task_ended("kanban_task_completed"))
    ctx.register_hook("kanban_task_blocked", _kanban_task_ended("kanban_task_blocked"))
    ctx.register_hook("pre_llm_call", _kanban_first_turn_recall)
    _kanban_worker_start()
    # ---- end of kanban hooks
