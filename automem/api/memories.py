"""`automem.Memories`: the memories of one Hermes root and profile, as one person sees them. Each method is the
function the CLI, the Hermes provider and the dashboard call (automem/api/__init__.py says how it is layered); what
the methods return is in automem/api/results.py."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, List, Mapping, Sequence

from ..errors import AutomemWarning, Refused, UsageError
from ..paths import Location, profile_name_problem
from .results import CATEGORIES, WING_OF, Decision, HeldMemory, Hit, MemoryView, Pinned, Recall

if TYPE_CHECKING:
    from ..config import Config
    from ..core.sharing import ShareResult
    from ..core.store import Store
    from ..ops.transfer import ImportReport

def _warn(kind: str, message: str) -> None:
    text = {"judge": f"the LLM judge could not be asked ({message}); the offline rules decided (judge=False "
                     f"skips it)"}.get(kind, message)
    warnings.warn(text, AutomemWarning, stacklevel=3)


def _scope_of(user: str | None) -> str:
    """`user` as a scope: None or "owner" the owner (""), "<platform>:<id>" a person, "chat:..." a chat."""
    if user is None:
        return ""
    if not isinstance(user, str):
        raise UsageError(f"user must be a string such as 'telegram:123456789' or None (the owner), not "
                         f"{type(user).__name__}")
    from ..hermes.gateway import user_scope_of

    try:
        return user_scope_of(user)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _wing_of(category: str | None) -> str | None:
    if category is None:
        return None
    wing = WING_OF.get(category) if isinstance(category, str) else None
    if wing is None:
        raise UsageError(f"category {category!r}: expected one of {', '.join(CATEGORIES)}")
    return wing


def _ids(ids: Sequence[Any], verb: str) -> List[str]:
    if not ids:
        raise UsageError(f"give the ids to {verb} (`search` and `list` return them)")
    bad = [i for i in ids if not isinstance(i, str) or not i]
    if bad:
        raise UsageError(f"{verb}: an id is a string such as 'm_3f2a...', not {bad[0]!r} (pass ids as separate "
                         f"arguments: {verb}(*ids))")
    return list(ids)


def _refusal(d: Decision) -> str:
    hint = ""
    if d.reason.startswith(("looks like a secret", "contains a redacted", "contains personal data")):
        hint = "; a secret or personal data is never stored: remember the fact without it"
    elif d.reason.startswith(("too short", "too long")):
        hint = "; a memory is one fact of 5 to 200 characters"
    return f"not remembered: {d.reason}{hint}"


class Memories:
    """The memories of one Hermes root and profile, as one person sees them.

    `hermes_home`: the Hermes root (or a profile's home under `<root>/profiles/`); None: $HERMES_HOME, else
    ~/.hermes. `profile`: None for the one the home points at (else "default"). `user`: None for the owner (who may
    act on every memory of the root: forget, show, review); "owner" for the owner's own memories only;
    "<platform>:<user id>" (e.g. "telegram:123456789") or "chat:<platform>:<chat id>" for a gateway person or chat,
    who reads only their own memories and the owner's instructions confirmed for everyone, and writes their own.

    The store opens on first use; use it as a context manager (or call `close`). Keep one per root in a process
    (two Chroma clients on one folder in one process do not see each other's writes): `with_profile` gives another
    profile of the same root over the same open store.
    """

    def __init__(self, hermes_home: str | os.PathLike[str] | None = None, profile: str | None = None,
                 user: str | None = None) -> None:
        if hermes_home is not None and not str(hermes_home).strip():
            raise UsageError("hermes_home is empty; give a folder, or None for $HERMES_HOME (else ~/.hermes)")
        if profile is not None:
            problem = profile_name_problem(profile)
            if problem:
                raise UsageError(f"profile: {problem}")
        self._setup(Location.resolve(hermes_home, profile), user)
        self._owned: Store | None = None
        self._config: Config | None = None
        self._get_config: Callable[[], Config] = self._load_config
        self._get_store: Callable[[], Store] = self._open_store

    def _setup(self, location: Location, user: str | None, scope: str | None = None) -> None:
        self._location = location
        self._user = user
        self._scope = _scope_of(user) if scope is None else scope
        self._closed = False
        self._by = "api"  # who wrote, in the memories' `added_by` and in the log ("cli" for the CLI)
        self._warn: Callable[[str, str], None] = _warn

    @classmethod
    def _over(cls, location: Location, config: Callable[[], Config], store: Callable[[], Store],
              user: str | None = None, *, scope: str | None = None, by: str = "api",
              warn: Callable[[str, str], None] | None = None) -> Memories:
        """A Memories over a config and a store someone else opened and closes (the CLI, the dashboard,
        `with_profile`). `scope`: a scope as stored (the dashboard's views), instead of a `user` to map. Internal."""
        mem = cls.__new__(cls)
        mem._setup(location, user if user is not None or scope is None else scope, scope)
        mem._owned, mem._config = None, None
        mem._get_config, mem._get_store = config, store
        mem._by = by
        if warn is not None:
            mem._warn = warn
        return mem

    # -- who and where -----------------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The Hermes root: automem's store lives in `<root>/automem/`."""
        return self._location.root

    @property
    def profile(self) -> str:
        return self._location.profile

    @property
    def user(self) -> str | None:
        """As given: None for the owner acting on the whole root."""
        return self._user

    @property
    def scope(self) -> str:
        """Whose memories this speaks for: "" the owner's, "user:<platform>:<id>" a person's, "chat:..." a chat's."""
        return self._scope

    def __repr__(self) -> str:
        who = "" if self._user is None else f", user={self._user!r}"
        return f"Memories(hermes_home={str(self.root)!r}, profile={self.profile!r}{who})"

    def with_profile(self, profile: str) -> Memories:
        """The same root and person in another profile, over this one's open store and settings (closing it leaves
        the store open: close this one)."""
        problem = profile_name_problem(profile)
        if problem:
            raise UsageError(f"profile: {problem}")
        return Memories._over(Location(self.root, profile), self._config_of, self._store_of, self._user,
                              scope=self._scope if self._user is not None else None, by=self._by, warn=self._warn)

    # -- opening and closing -----------------------------------------------------------------------------------
    def _load_config(self) -> Config:
        if self._config is None:
            from ..config import load_config

            self._config = load_config(self._location)
            for warning in self._config.warnings:
                self._warn("config", warning)
        return self._config

    def _open_store(self) -> Store:
        if self._owned is None:
            from ..core.store import Store

            self._owned = Store(self._location, self._load_config())
        return self._owned

    def _config_of(self) -> Config:
        return self._get_config()

    def _store_of(self) -> Store:
        if self._closed:
            raise UsageError(f"{self!r} is closed; open a new Memories to use the store again")
        return self._get_store()

    def close(self) -> None:
        """Close the store (if this Memories opened it). Safe to call twice."""
        self._closed = True
        store, self._owned = self._owned, None
        if store is not None:
            store.close()

    def __enter__(self) -> Memories:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ------------------------------------------------------------------------------------------------
    def remember(self, text: str, category: str = "persona", *, judge: bool = True) -> Decision:
        """Store one memory through the write path, as `automem add` does: duplicate (already known), update (the
        older value is superseded and no longer recalled) or new. `category`: "persona" (about the person),
        "episodic" (an event) or "instruction" (a standing way of working; the owner's reach every profile).

        With `judge` (the default) the LLM judge settles a pair the offline rules are unsure of, when config.yaml
        sets an LLM backend; an unreachable judge leaves the rules' decision (an AutomemWarning says so).
        Raises `automem.errors.Refused` for a text the write path will not store (a secret, personal data, too
        short or too long): nothing is stored, and `err.decision` holds the details."""
        _wing_of(category)  # an unknown category is a usage error here, not a refused memory
        d = self.remember_many([{"text": text, "category": category}], judge=judge)[0]
        if d.action == "rejected":
            raise Refused(_refusal(d), decision=d)
        return d

    def remember_many(self, items: Iterable[str | Mapping[str, Any]], *, category: str = "persona",
                      judge: bool = True) -> List[Decision]:
        """Store many memories in one pass of the write path (one lock, one batched judge call), as
        `automem add --file` does. Each item is a text (in `category`), or a mapping {"text", "category"?,
        "profile"?} ("wing" is accepted for "category", as in `automem add --file`). One Decision per item, in
        order; a refused item is a Decision with action "rejected" (the others are still stored)."""
        return self._remember(self._candidates(items, category), judge)

    def _candidates(self, items: Iterable[str | Mapping[str, Any]], category: str) -> list:
        from ..core.provenance import OWNER_SPEAKER, Evidence
        from ..core.write_path import Candidate

        default_wing = _wing_of(category)
        # typed in on purpose: the words are the memory itself, so the evidence is who typed them and how
        typed = Evidence(speaker=OWNER_SPEAKER if self._user is None else self._scope, role="user", origin="cli")
        cands = []
        text: Any
        profile: Any
        wing: Any  # a mapping's "wing" goes to the write path as given: an unknown one is refused there, per item
        for n, item in enumerate(items, 1):
            if isinstance(item, str):
                text, wing, profile = item, default_wing, self.profile
            elif isinstance(item, Mapping):
                unknown = sorted(set(item) - {"text", "category", "wing", "profile"})
                if unknown:
                    raise UsageError(f"item {n}: unknown field {', '.join(map(repr, unknown))} (fields: text, "
                                     f"category, profile)")
                text, profile = item.get("text"), item.get("profile") or self.profile
                if not isinstance(text, str):
                    raise UsageError(f"item {n}: needs a string field \"text\"")
                if not isinstance(profile, str):
                    raise UsageError(f"item {n}: \"profile\" must be a string")
                if "wing" in item:
                    wing = item["wing"]  # the CLI's name for the category
                else:
                    raw = item.get("category", category)
                    wing = WING_OF.get(raw, raw) if isinstance(raw, str) else str(raw)
                problem = profile_name_problem(profile)
                if problem:
                    raise UsageError(f"item {n}: {problem}")
            else:
                raise UsageError(f"item {n}: expected a text or a mapping {{\"text\", \"category\"?, \"profile\"?}}, "
                                 f"not {type(item).__name__}")
            cands.append(Candidate(text=text, wing=wing, profile=profile, room="cli", added_by=self._by,
                                   scope=self._scope, evidence=typed))
        return cands

    def queue_many(self, items: Iterable[str | Mapping[str, Any]], *, category: str = "persona",
                   judge: bool = True) -> str:
        """Queue memories for the write path when the store cannot take them now (a Chroma server that does not
        answer: `automem.errors.StoreUnavailable`): one spool job that every drainer retries until the server
        answers, then stored exactly as `remember_many` would. Items as `remember_many`'s. Returns the job id."""
        from ..extract.pipeline import queue_adds

        return queue_adds(self._location, self._candidates(items, category), judge=judge)

    def _remember(self, cands: list, judge: bool) -> List[Decision]:
        from ..core.write_path import remember

        if not cands:
            return []
        store = self._store_of()
        details: dict = {}
        decisions = remember(store, cands, judge=self._judge(details) if judge else None)
        if details.get("judge_error"):
            self._warn("judge", str(details["judge_error"]))
        return [Decision._of(d) for d in decisions]

    def _judge(self, details: dict) -> Any:
        """The LLM judge for this Memories' writes: the backend extraction would use (None for the offline rules)."""
        from ..extract.pipeline import judge_for

        return judge_for(self._location, self._config_of(), origin="cli", details=details)

    def forget(self, *ids: str) -> dict[str, bool]:
        """Forget memories for good: their words and vectors are deleted everywhere automem keeps them (the store,
        its index, the log, queued jobs); only the id and a hash stay, so automatic sources cannot bring them back
        (an explicit `remember` can). {id: True if forgotten now, False if it already was}. An unknown id refuses
        the whole call (NotFound); with `user=`, so does a memory that is not that person's."""
        from ..core.curation import forget_ids

        wanted = _ids(ids, "forget")
        scope = self._scope if self._user is not None else None
        return forget_ids(self._store_of(), wanted, scope=scope, who=f"--user {self._user}")

    def pin(self, *ids: str) -> List[Pinned]:
        """Always put these persona / instruction memories (of this profile and person) in the system-prompt
        block, ahead of the ranked ones, within its budget."""
        return self._set_pinned(ids, True)

    def unpin(self, *ids: str) -> List[Pinned]:
        """Let these memories be ranked like the others again."""
        return self._set_pinned(ids, False)

    def _set_pinned(self, ids: Sequence[str], value: bool) -> List[Pinned]:
        from ..core.curation import set_pinned

        mems, changed = set_pinned(self._store_of(), _ids(ids, "pin" if value else "unpin"), self.profile,
                                   self._scope, value)
        return [Pinned(MemoryView._of(m), m.id in changed) for m in mems]

    def share(self, *ids: str) -> ShareResult:
        """Confirm the owner's instructions for everyone: gateway users (people other than the owner) read only
        confirmed ones. Each is checked for secrets, personal data and injection first; the result lists the ids
        changed, those already shared, and the refused ones with the reason. Raises Refused when every id was
        refused (`err.result` holds the reasons)."""
        return self._share(ids, True)

    def unshare(self, *ids: str) -> ShareResult:
        """Withdraw the confirmation: these instructions reach the owner's own profiles only again."""
        return self._share(ids, False)

    def _share(self, ids: Sequence[str], everyone: bool) -> ShareResult:
        from ..core import sharing

        verb = "share" if everyone else "unshare"
        if self._user is not None:
            raise UsageError(f"{verb}: only the owner's instructions can be shared; open Memories without user=")
        wanted = _ids(ids, verb)
        result = (sharing.share if everyone else sharing.unshare)(self._store_of(), wanted, by=self._by)
        if result.refused and not (result.changed or result.unchanged):
            raise Refused(f"nothing {verb}d: " + "; ".join(f"{i}: {r}" for i, r in result.refused.items()),
                          result=result)
        return result

    def accept_held(self, *ids: str, judge: bool = True) -> List[Decision]:
        """Store memories held for review (see `review`) through the write path, as their source would have: one
        Decision each, in order. NotFound for an id that is not held."""
        from ..core import review

        details: dict = {}
        wanted = list(dict.fromkeys(_ids(ids, "accept")))
        store = self._store_of()
        decisions = review.accept(store, wanted, judge=self._judge(details) if judge else None, by=self._by)
        if details.get("judge_error"):
            self._warn("judge", str(details["judge_error"]))
        return [Decision._of(d) for d in decisions]

    def reject_held(self, *ids: str) -> dict[str, bool]:
        """Forget memories held for review for good (automatic sources cannot hold them again).
        {id: True if forgotten now}."""
        from ..core import review

        return review.reject(self._store_of(), _ids(ids, "reject"), by=self._by)

    def import_(self, source: str | os.PathLike[str] | bytes, *, skip_invalid: bool = False,
                restore_forgotten: bool = False, name: str = "<import>") -> ImportReport:
        """Store memories from an export (a file path, or its bytes; `name` names bytes in messages), exactly as
        exported (ids, metadata), each text checked as `remember` checks it. An invalid line imports nothing
        (UsageError naming the line) unless `skip_invalid`: then the report lists it. A memory forgotten here
        since the export was made stays forgotten unless `restore_forgotten`. (`import` is Python's keyword.)"""
        from ..ops.jsonl import jsonl_objects
        from ..ops.transfer import MAX_LINE_BYTES, plan_import, run_import

        self._owner_only("import")
        if isinstance(source, (bytes, bytearray)):
            raw = bytes(source)
        else:
            name = os.fspath(source)
            try:
                with open(name, "rb") as fh:
                    raw = fh.read()
            except OSError as exc:
                raise UsageError(f"cannot read {name}: {exc.strerror}") from None
        lines = ((f"{name}:{n}", obj) for n, obj in jsonl_objects(raw, name, MAX_LINE_BYTES))
        plan = plan_import(lines, self.profile, skip_invalid=skip_invalid)
        return run_import(self._store_of(), plan, restore_forgotten=restore_forgotten)

    # -- reads -------------------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 5, *, category: str | None = None) -> List[Hit]:
        """The memories this person may see that answer `query`, best first: the hybrid ranking (meaning and
        shared words) of `automem search` and of Hermes' recall. Superseded and forgotten memories never appear."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise UsageError("k must be a whole number, at least 1")
        if not isinstance(query, str):
            raise UsageError(f"query must be a string, not {type(query).__name__}")
        hits = self._store_of().recall(query, k=k, profile=self.profile, wing=_wing_of(category),
                                       scopes=(self._scope,))
        return [Hit(m.id, m.text, m.category, m.profile, m.scope, float(d), int(m.updated_at or 0), bool(m.pinned),
                    _json={**m.to_json(), "distance": round(d, 4)}) for m, d in hits]

    def recall(self, query: str = "") -> Recall:
        """What Hermes would put in the agent's prompt now, for this profile and person: the system-prompt block,
        and for `query` (a user message) the relevant memories not already in the block. Counted as shown, as
        Hermes' recall is (a ranking signal of the block)."""
        from ..core.recall import prefetch_block, system_prompt_block

        if not isinstance(query, str):
            raise UsageError(f"query must be a string, not {type(query).__name__}")
        store, config, scopes = self._store_of(), self._config_of(), (self._scope,)
        block, shown = system_prompt_block(self._location, config, open_store=lambda: store, scopes=scopes)
        prefetch, more = prefetch_block(self._location, config, query, store=store, exclude=shown, scopes=scopes)
        return Recall(block, prefetch, tuple(dict.fromkeys([*shown, *more])))

    def list(self, category: str | None = None, *, include_hidden: bool = False, all_profiles: bool = False,
             all_users: bool = False, limit: int | None = None) -> List[MemoryView]:
        """The memories this person may see, newest first, as `automem list` shows them. `include_hidden`: also
        superseded ones, and then the forgotten ones (id and where only: `text` is None). `all_profiles`: every
        profile's, not only what this profile sees; `all_users`: every person's and chat's."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise UsageError("limit must be a whole number, 0 or more (or None)")
        wing = _wing_of(category)
        store = self._store_of()
        profile = None if all_profiles else self.profile
        scopes = None if all_users else (self._scope,)
        out = [MemoryView._of(m) for m in store.list(profile=profile, wing=wing, include_hidden=include_hidden,
                                                     limit=limit, scopes=scopes)]
        if include_hidden:
            out += [MemoryView._of_tombstone(t) for t in store.tombstones()
                    if (profile is None or t.get("profile") == profile) and (wing is None or t.get("wing") == wing)
                    and (scopes is None or t.get("scope", "") in scopes)]
        return out

    def show(self, memory_id: str) -> MemoryView:
        """One memory and what made it what it is, as `automem show` prints it: where it was learned (`evidence`,
        `source`: the words, who said them, the turn, how it entered), its `events` (created, restated, updated
        from / edited / merged, pinned, superseded), the values it replaced (`replaced`, nearest first) and what
        replaced it (`replaced_by`); `to_json()` is `automem show --json`'s object. The owner (user=None) may show
        any memory of the root; a person only what they may see (the owner's shared instructions without their
        source, events or chain: `private`). NotFound for an unknown or forgotten id, or one held for review."""
        from ..core.history import show

        if not isinstance(memory_id, str) or not memory_id:
            raise UsageError("show: give one memory id (a string such as 'm_3f2a...')")
        person = self._user is not None
        return MemoryView._of_shown(show(self._store_of(), memory_id, profile=self.profile if person else None,
                                         scopes=(self._scope,) if person else None))

    def edit(self, memory_id: str, text: str) -> Decision:
        """Correct a memory, as `automem edit` does: `text` goes through the write path's checks and becomes the
        active memory with the old one's category, profile, person, pin and provenance; the old one is superseded
        with reason "edited" (its history says so). A person corrects only their own memories. Raises Refused
        (nothing changed) for a text the write path will not store or that would change the memory's category,
        NotFound for an unknown id."""
        from ..core.write_path import edit

        if not isinstance(memory_id, str) or not memory_id or not isinstance(text, str):
            raise UsageError("edit: give a memory id and the corrected text (strings)")
        d = Decision._of(edit(self._store_of(), memory_id, text,
                              scopes=(self._scope,) if self._user is not None else None))
        if d.action == "rejected":
            raise Refused(f"not changed: {d.reason}", decision=d)
        return d

    def review(self, *, all_profiles: bool = False, all_users: bool = False) -> List[HeldMemory]:
        """What the write path held back as injection-shaped (from conversations; never shown to the model), newest
        first, each with the reason. This profile's and person's unless `all_profiles` / `all_users`."""
        from ..core import review

        items = review.held_memories(self._store_of(), profile=None if all_profiles else self.profile,
                                     scope=None if all_users else self._scope)
        return [HeldMemory._of(m, reason=review.held_reason(m)) for m in items]

    def owner_instructions(self, *, all_profiles: bool = False) -> List[MemoryView]:
        """The owner's active instructions (this profile's, or every profile's), newest first; `shared` says which
        are confirmed for everyone. What `share` acts on."""
        from ..core import sharing

        store = self._store_of()
        profile = None if all_profiles else self.profile
        rows = sharing.awaiting_confirmation(store, profile) + sharing.shared_with_everyone(store, profile)
        rows.sort(key=lambda m: (m.updated_at or m.created_at, m.created_at, m.id), reverse=True)
        return [MemoryView._of(m) for m in rows]

    def export(self, path: str | os.PathLike[str], *, forgotten: bool = False) -> int:
        """Write every memory of every profile and person to `path` as JSON lines (owner-only file; secrets
        redacted), with `forgotten` also the forgotten ones' ids and hashes (never words). Returns the number of
        lines. Only the owner (user=None) exports: the file holds everyone's memories."""
        from ..ops.transfer import check_export_target, export_to_file

        self._owner_only("export")
        target = os.fspath(path)
        check_export_target(target)  # before the store is opened
        return export_to_file(self._store_of(), target, forgotten=forgotten)

    def export_lines(self, *, forgotten: bool = False) -> Iterator[str]:
        """The export as JSON lines (without newlines), for a stream."""
        from ..ops.transfer import export_lines

        self._owner_only("export")
        return iter(export_lines(self._store_of(), forgotten=forgotten))

    def _owner_only(self, verb: str) -> None:
        if self._user is not None:
            raise UsageError(f"{verb} holds every memory of every profile and person: open Memories without user= "
                             f"(the owner) to {verb}")

