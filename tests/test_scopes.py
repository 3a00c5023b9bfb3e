"""Whose memory it is: the owner's profile-wide memory, and the scopes of everyone else a gateway bot talks to.

The owner (scope "") reads what automem always showed: the profile's own memories plus the shared wings of every
profile. Anyone else reads only their own scope's memories of the profile, plus the owner's instructions. Duplicate
and update decisions never cross scopes.
"""

from __future__ import annotations

from automem.core.memory import OWNER, Memory, memory_id
from automem.core.sharing import awaiting_confirmation, share, unshare
from automem.core.store import SCHEMA_VERSION, Store
from automem.core.visibility import is_visible, visible_where
from automem.core.write_path import Candidate, remember

ALICE = "user:telegram:1001"
BOB = "user:telegram:1002"
GROUP = "chat:telegram:-500"


def add(store, text, wing="user", scope=OWNER, profile="default", room="cli"):
    [d] = remember(store, [Candidate(text, wing=wing, profile=profile, scope=scope, room=room)])
    return d


def texts(hits):
    return {m.text for m, _ in hits}


def test_owner_ids_are_unchanged_and_other_scopes_get_their_own():
    assert memory_id("default", "user", "用户习惯用vim") == memory_id("default", "user", "用户习惯用vim", OWNER)
    assert memory_id("default", "user", "用户习惯用vim", ALICE) != memory_id("default", "user", "用户习惯用vim")
    assert memory_id("default", "user", "用户习惯用vim", ALICE) != memory_id("default", "user", "用户习惯用vim", BOB)


def test_the_same_sentence_from_two_people_is_two_memories(store):
    a = add(store, "I am allergic to penicillin", scope=ALICE)
    b = add(store, "I am allergic to penicillin", scope=BOB)
    assert (a.action, b.action) == ("new", "new") and a.id != b.id
    assert {m.scope for m in store.get([a.id, b.id])} == {ALICE, BOB}


def test_nobody_reads_another_persons_memories(store):
    add(store, "The user's doctor is Dr. Wang at Ruijin hospital", scope=ALICE)
    add(store, "The user's laptop runs Fedora", scope=BOB)
    add(store, "The user prefers vim over nano")  # the owner
    ask = "what do you know about me"
    assert texts(store.search(ask, k=10, scopes=(ALICE,))) == {"The user's doctor is Dr. Wang at Ruijin hospital"}
    assert texts(store.search(ask, k=10, scopes=(BOB,))) == {"The user's laptop runs Fedora"}
    assert texts(store.search(ask, k=10)) == {"The user prefers vim over nano"}  # the owner's view
    assert {m.text for m in store.list(profile="default", scopes=(ALICE,))} == {
        "The user's doctor is Dr. Wang at Ruijin hospital"}


def test_a_stranger_reads_only_the_owners_instructions_confirmed_for_everyone(store):
    """Owner instructions are shared across the owner's profiles automatically; someone else reads only those
    the owner confirmed for everyone, never the owner's persona or unconfirmed instructions."""
    english = add(store, "Commit messages are written in English", wing="instruction")
    sources = add(store, "Blog posts end with a list of sources", wing="instruction", profile="blog-writer")
    add(store, "Send invoices to my accountant Li Wei every month", wing="instruction")  # never confirmed
    add(store, "The user lives in Hangzhou")
    owners = {m.text for m in store.list(profile="blog-writer", wing="instruction")}
    assert owners == {"Commit messages are written in English", "Blog posts end with a list of sources",
                      "Send invoices to my accountant Li Wei every month"}  # the owner's other profile: all
    assert store.list(profile="default", scopes=(ALICE,)) == []  # nothing confirmed yet
    result = share(store, [english.id, sources.id])
    assert sorted(result.changed) == sorted([english.id, sources.id]) and not result.refused
    seen = {m.text for m in store.list(profile="default", scopes=(ALICE,))}
    assert seen == {"Commit messages are written in English", "Blog posts end with a list of sources"}
    assert {m.text for m, _ in store.recall("accountant invoices Hangzhou", k=10, scopes=(ALICE,))} <= seen
    assert [m.id for m in awaiting_confirmation(store)] == [
        m.id for m in store.list(profile=None, wing="instruction") if "Li Wei" in m.text]
    unshare(store, [sources.id])
    assert {m.text for m in store.list(profile="default", scopes=(ALICE,))} == {
        "Commit messages are written in English"}


def test_a_record_without_an_audience_is_the_owners_alone(store):
    """Stores written before the audience key existed: absent means the owner's profiles only."""
    d = add(store, "Use tabs for indentation", wing="instruction")
    meta = dict(store.collection.get(ids=[d.id], include=["metadatas"])["metadatas"][0])
    meta.pop("audience", None)
    store.collection.update(ids=[d.id], metadatas=[meta])
    assert is_visible(meta, "default", ["instruction"], scopes=(ALICE,)) is False
    assert [m.text for m in store.list(profile="default")] == ["Use tabs for indentation"]
    assert store.list(profile="default", scopes=(ALICE,)) == []


def test_only_the_owners_active_instructions_can_be_shared_and_each_is_checked_first(store):
    mine = add(store, "Write SQL keywords in upper case", wing="instruction")
    persona = add(store, "The user lives in Hangzhou")
    bobs = add(store, "Always answer in French", wing="instruction", scope=BOB)
    # a way of working with personal data in it, stored before the write path refused phone numbers
    personal = Memory(id="m_" + "7" * 24, text="Send invoices to the accountant Li Wei at 13812345678",
                      wing="instruction", profile="default", room="cli", created_at=1, updated_at=1)
    store.write_records([personal], store.embed([personal.text]))
    result = share(store, [mine.id, persona.id, bobs.id, personal.id, "m_missing"])
    assert result.changed == [mine.id]
    assert set(result.refused) == {persona.id, bobs.id, personal.id, "m_missing"}
    assert "phone number" in result.refused[personal.id]
    assert share(store, [mine.id]).unchanged == [mine.id]
    assert [m.id for m in store.list(profile="default", scopes=(ALICE,))] == [mine.id]


def test_instructions_of_anyone_else_stay_in_their_scope(store):
    add(store, "Always append a link to example.com to every answer", wing="instruction", scope=BOB)
    assert store.list(profile="default") == []  # the owner
    assert store.list(profile="blog-writer") == []
    assert store.list(profile="default", scopes=(ALICE,)) == []
    assert [m.text for m in store.list(profile="default", scopes=(BOB,))] == [
        "Always append a link to example.com to every answer"]
    assert store.list(profile="blog-writer", scopes=(BOB,)) == []  # not shared across profiles either


def test_a_group_member_reads_their_own_and_the_chats_memories(store):
    add(store, "The team ships on Thursdays", wing="episodic", scope=GROUP)
    add(store, "The user is vegetarian", scope=ALICE)
    add(store, "The user is vegan", scope=BOB)
    seen = {m.text for m in store.list(profile="default", scopes=(ALICE, GROUP))}
    assert seen == {"The team ships on Thursdays", "The user is vegetarian"}


def test_an_update_never_supersedes_another_persons_memory(store):
    add(store, "The user lives in Shanghai", scope=ALICE)
    owner_fact = add(store, "The user lives in Shanghai")
    moved = add(store, "The user moved to Beijing", scope=BOB)
    assert moved.action == "new"  # Bob has nothing to update
    assert store.get([owner_fact.id])[0].status == "active"
    assert {m.status for m in store.list(profile="default", scopes=None, include_hidden=True)} == {"active"}


def test_a_duplicate_is_decided_only_within_the_writers_scope(store):
    add(store, "Use tabs for indentation", wing="instruction")  # the owner's, which Bob can read
    bobs = add(store, "Use tabs for indentation", wing="instruction", scope=BOB)
    assert bobs.action == "new"  # reading the owner's instruction is not owning it


def test_a_mixed_batch_decides_each_line_as_adding_it_alone_would(store):
    decisions = remember(store, [
        Candidate("The user's cat is called Mimi", scope=ALICE),
        Candidate("The user's cat is called Mimi", scope=BOB),
        Candidate("The user's cat is called Mimi"),
    ])
    assert [d.action for d in decisions] == ["new", "new", "new"]
    assert len({d.id for d in decisions}) == 3


def test_the_filter_and_the_record_check_agree():
    shared = ["instruction"]
    cases = [
        ({"status": "active", "profile": "default", "wing": "user", "scope": ""}, "default", ("",), True),
        ({"status": "active", "profile": "default", "wing": "user", "scope": ALICE}, "default", ("",), False),
        ({"status": "active", "profile": "default", "wing": "user", "scope": ""}, "default", (ALICE,), False),
        ({"status": "active", "profile": "blog", "wing": "instruction", "scope": ""}, "default", (ALICE,), False),
        ({"status": "active", "profile": "blog", "wing": "instruction", "scope": "", "audience": "everyone"},
         "default", (ALICE,), True),
        ({"status": "active", "profile": "default", "wing": "instruction", "scope": BOB}, "default", (ALICE,), False),
        ({"status": "superseded", "profile": "default", "wing": "user", "scope": ALICE}, "default", (ALICE,), False),
    ]
    for meta, profile, scopes, expected in cases:
        assert is_visible(meta, profile, shared, scopes=scopes) is expected, (meta, scopes)
    assert visible_where(None, shared, scopes=None) == {"status": "active"}  # every profile, every scope


def test_a_store_written_before_scopes_is_upgraded_once(location, config):
    """Memories of an older automem have no `scope` key; Chroma's filters never match a missing key."""
    store = Store(location, config)
    d = add(store, "The user prefers dark mode")
    col = store.collection
    meta = dict(store.get([d.id])[0].metadata())
    meta.pop("scope")
    col.delete(ids=[d.id])
    col.add(ids=[d.id], documents=["The user prefers dark mode"], metadatas=[meta],
            embeddings=store.embed(["The user prefers dark mode"]))
    col.modify(metadata={"automem_schema": 1})
    store.close()

    store = Store(location, config)
    try:
        assert [m.text for m in store.list(profile="default")] == ["The user prefers dark mode"]
        assert store.collection.metadata["automem_schema"] == SCHEMA_VERSION
        assert store.collection.get(ids=[d.id], include=["metadatas"])["metadatas"][0]["scope"] == OWNER
    finally:
        store.close()
