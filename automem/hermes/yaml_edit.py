"""Minimal, comment-keeping edits of a Hermes config.yaml.

pyyaml drops comments on a round trip and ruamel.yaml is not an automem dependency, while Hermes' own config
files carry long comment blocks. So installs edit the text: find the key by indentation, change one line or
insert one, then parse the result and compare it with the intended data. Anything this editor cannot do safely
(flow mappings, anchors, multi-line scalars in the way) raises `EditError`; the caller then falls back to a full
pyyaml dump, which keeps every key and value but loses the comments (the backup keeps them).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

import yaml

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_][A-Za-z0-9_.\-]*|\"[^\"]*\"|'[^']*')\s*:(?P<rest>(\s.*)?)$")
_ITEM = re.compile(r"^(?P<indent> *)-(\s+(?P<value>.*))?$")
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./\-]*$")


class EditError(Exception):
    """The text edit is not safe here; use the full-dump fallback."""


class ShapeError(ValueError):
    """The config holds something else where a mapping or a list is needed (the user must fix it)."""


@dataclass(frozen=True)
class Op:
    """One change: set a scalar, add to / remove from a list of scalars, or delete a key."""

    kind: str  # set | add | remove | delete
    path: tuple[str, ...]
    value: Any = None


def set_value(*path: str, value: Any) -> Op:
    return Op("set", tuple(path), value)


def add_item(*path: str, value: Any) -> Op:
    return Op("add", tuple(path), value)


def remove_item(*path: str, value: Any) -> Op:
    return Op("remove", tuple(path), value)


def delete_key(*path: str) -> Op:
    return Op("delete", tuple(path))


# -- the intended data -----------------------------------------------------------------------------------------
def apply_to_data(data: Any, ops: Sequence[Op]) -> dict:
    """What the config must parse to after `ops` (the reference the text edit is checked against)."""
    out = copy.deepcopy(data) if isinstance(data, dict) else {}
    for op in ops:
        parent = out
        for depth, key in enumerate(op.path[:-1]):
            current = parent.get(key)
            if current is not None and not isinstance(current, dict):
                raise ShapeError(f"`{'.'.join(op.path[:depth + 1])}` is a {type(current).__name__}, not a mapping")
            if current is None:
                if op.kind in ("remove", "delete"):
                    parent = None
                    break
                parent[key] = {}
            parent = parent[key]
        if parent is None:
            continue
        leaf = op.path[-1]
        if op.kind == "set":
            parent[leaf] = op.value
        elif op.kind == "add":
            current = parent.get(leaf)
            if current is not None and not isinstance(current, list):
                raise ShapeError(f"`{'.'.join(op.path)}` is a {type(current).__name__}, not a list")
            if current is None:
                current = []
            if op.value not in current:
                current = current + [op.value]
            parent[leaf] = current
        elif op.kind == "remove":
            if isinstance(parent.get(leaf), list):
                parent[leaf] = [v for v in parent[leaf] if v != op.value]
        elif op.kind == "delete":
            parent.pop(leaf, None)
    return out


# -- scalars ---------------------------------------------------------------------------------------------------
def render_scalar(value: Any) -> str:
    if isinstance(value, (list, tuple)):  # a list of scalars, as a flow list (`shared_wings: [instruction]`)
        return _render_flow(list(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and yaml.safe_load(text) == text:
        return text
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid double-quoted YAML scalar


def _split_comment(rest: str) -> tuple[str, str]:
    """(value, ' # comment') of what follows `key:`; a # inside quotes is not a comment."""
    quote = None
    for i, ch in enumerate(rest):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or rest[i - 1] in " \t"):
            value = rest[:i].rstrip()
            return value.strip(), rest[len(value):].rstrip() if value.strip() else " " + rest[i:].rstrip()
    return rest.strip(), ""


# -- locating keys ---------------------------------------------------------------------------------------------
def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _key_name(raw: str) -> str:
    return raw[1:-1] if raw[:1] in "\"'" else raw


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """Index after the last content line that belongs to the block opened at `start` (children: deeper indent,
    or list items at the same indent)."""
    end = start + 1
    last = start
    while end < len(lines):
        line = lines[end]
        if _content(line):
            ind = _indent(line)
            if ind < indent or (ind == indent and not _ITEM.match(line)):
                break
            last = end
        end += 1
    return last + 1


def _find(lines: list[str], path: Sequence[str], start: int = 0, end: int | None = None,
          indent: int = 0) -> int | None:
    """Line index of `path` inside lines[start:end], whose keys sit at `indent`."""
    end = len(lines) if end is None else end
    i = start
    while i < end:
        line = lines[i]
        if _content(line):
            ind = _indent(line)
            if ind < indent:
                return None
            m = _KEY.match(line)
            if ind == indent and m and _key_name(m.group("key")) == path[0]:
                if len(path) == 1:
                    return i
                block_end = _block_end(lines, i, indent)
                child = _child_indent(lines, i, block_end)
                if child is None:
                    return None
                return _find(lines, path[1:], i + 1, block_end, child)
        i += 1
    return None


def _child_indent(lines: list[str], parent: int, block_end: int) -> int | None:
    for j in range(parent + 1, block_end):
        if _content(lines[j]):
            ind = _indent(lines[j])
            return ind if ind > _indent(lines[parent]) else None
    return None


def _value_of(line: str) -> tuple[str, str]:
    m = _KEY.match(line)
    if not m:
        raise EditError(f"not a key line: {line!r}")
    return _split_comment(m.group("rest") or "")


def _replace_value(line: str, new_value: str) -> str:
    m = _KEY.match(line)
    assert m
    _, comment = _split_comment(m.group("rest") or "")
    if not new_value:
        return f"{m.group('indent')}{m.group('key')}:{comment}"
    return f"{m.group('indent')}{m.group('key')}: {new_value}{comment}"


# -- edits -----------------------------------------------------------------------------------------------------
def _ensure_parent(lines: list[str], path: Sequence[str]) -> tuple[int | None, int]:
    """(line of the parent mapping or None for the top level, indent for its children); created when missing."""
    if not path:
        return None, 0
    idx = _find(lines, path)
    if idx is None:
        parent_idx, child_indent = _ensure_parent(lines, path[:-1])
        new_line = " " * child_indent + f"{render_scalar(path[-1])}:"
        pos = _insert_position(lines, parent_idx, child_indent)
        lines.insert(pos, new_line)
        return pos, child_indent + 2
    value, _ = _value_of(lines[idx])
    block_end = _block_end(lines, idx, _indent(lines[idx]))
    child = _child_indent(lines, idx, block_end)
    if value in ("", "{}", "null", "~"):
        first_child = next((lines[j] for j in range(idx + 1, block_end) if _content(lines[j])), None)
        if first_child is not None and _ITEM.match(first_child):
            raise EditError(f"{'.'.join(path)} is a list, not a mapping")
        if value:
            m = _KEY.match(lines[idx])
            _, comment = _split_comment(m.group("rest") or "")
            lines[idx] = f"{m.group('indent')}{m.group('key')}:{comment}"
        return idx, child if child is not None else _indent(lines[idx]) + 2
    raise EditError(f"{'.'.join(path)} is not a block mapping ({value!r})")


def _insert_position(lines: list[str], parent_idx: int | None, child_indent: int) -> int:
    """Where a new child of `parent_idx` goes: right after the parent's last content line (top level: after the
    last content line of the file, so trailing comment blocks stay at the end)."""
    if parent_idx is None:
        last = max((i for i, line in enumerate(lines) if _content(line)), default=-1)
        return last + 1
    return _block_end(lines, parent_idx, _indent(lines[parent_idx]))


def _set(lines: list[str], path: Sequence[str], value: Any) -> None:
    idx = _find(lines, path)
    if idx is not None:
        current, _ = _value_of(lines[idx])
        block_end = _block_end(lines, idx, _indent(lines[idx]))
        if current == "" and block_end > idx + 1:
            raise EditError(f"{'.'.join(path)} holds a block; will not overwrite it with a scalar")
        if current.startswith(("|", ">", "&", "*", "!")):
            raise EditError(f"{'.'.join(path)} uses YAML features this editor leaves alone")
        lines[idx] = _replace_value(lines[idx], render_scalar(value))
        return
    parent_idx, child_indent = _ensure_parent(lines, path[:-1])
    pos = _insert_position(lines, parent_idx, child_indent)
    lines.insert(pos, " " * child_indent + f"{render_scalar(path[-1])}: {render_scalar(value)}")


def _flow_list(value: str) -> list | None:
    if not value.startswith("["):
        return None
    parsed = yaml.safe_load(value)
    if not isinstance(parsed, list) or any(isinstance(v, (dict, list)) for v in parsed):
        raise EditError(f"flow list {value!r} is not a list of scalars")
    return parsed


def _render_flow(items: list) -> str:
    return "[" + ", ".join(render_scalar(v) for v in items) + "]"


def _list_items(lines: list[str], idx: int) -> list[int]:
    """Line indexes of the block-list items under the key at `idx`."""
    end = _block_end(lines, idx, _indent(lines[idx]))
    out = []
    for j in range(idx + 1, end):
        if not _content(lines[j]):
            continue
        m = _ITEM.match(lines[j])
        if not m:
            raise EditError(f"{lines[idx].strip()} holds something other than a list")
        out.append(j)
    return out


def _add(lines: list[str], path: Sequence[str], value: Any) -> None:
    idx = _find(lines, path)
    if idx is None:
        _set_raw(lines, path, _render_flow([value]))
        return
    current, _ = _value_of(lines[idx])
    flow = _flow_list(current)
    if flow is not None:
        if value not in flow:
            lines[idx] = _replace_value(lines[idx], _render_flow(flow + [value]))
        return
    if current in ("", "null", "~"):
        items = _list_items(lines, idx)
        if not items:
            lines[idx] = _replace_value(lines[idx], _render_flow([value]))
            return
        values = [yaml.safe_load(_split_comment(_ITEM.match(lines[j]).group("value") or "")[0]) for j in items]
        if value in values:
            return
        last = lines[items[-1]]
        lines.insert(items[-1] + 1, " " * _indent(last) + "- " + render_scalar(value))
        return
    raise EditError(f"{'.'.join(path)} is not a list ({current!r})")


def _set_raw(lines: list[str], path: Sequence[str], raw: str) -> None:
    parent_idx, child_indent = _ensure_parent(lines, path[:-1])
    pos = _insert_position(lines, parent_idx, child_indent)
    lines.insert(pos, " " * child_indent + f"{render_scalar(path[-1])}: {raw}")


def _remove(lines: list[str], path: Sequence[str], value: Any) -> None:
    idx = _find(lines, path)
    if idx is None:
        return
    current, _ = _value_of(lines[idx])
    flow = _flow_list(current)
    if flow is not None:
        if value in flow:
            lines[idx] = _replace_value(lines[idx], _render_flow([v for v in flow if v != value]))
        return
    if current in ("", "null", "~"):
        for j in reversed(_list_items(lines, idx)):
            raw = _split_comment(_ITEM.match(lines[j]).group("value") or "")[0]
            if yaml.safe_load(raw) == value:
                del lines[j]
        if not _list_items(lines, idx):
            lines[idx] = _replace_value(lines[idx], "[]")
        return
    raise EditError(f"{'.'.join(path)} is not a list ({current!r})")


def _delete(lines: list[str], path: Sequence[str]) -> None:
    idx = _find(lines, path)
    if idx is None:
        return
    end = _block_end(lines, idx, _indent(lines[idx]))
    del lines[idx:end]
    if len(path) > 1:  # an emptied mapping must stay a mapping ({}), not turn into null
        parent = _find(lines, path[:-1])
        if (parent is not None
                and _child_indent(lines, parent, _block_end(lines, parent, _indent(lines[parent]))) is None):
            value, _ = _value_of(lines[parent])
            if value == "":
                lines[parent] = _replace_value(lines[parent], "{}")


def edit_text(text: str, ops: Sequence[Op]) -> str:
    """`text` with `ops` applied by minimal line edits; raises EditError when the result would not parse to
    exactly the intended data."""
    try:
        original = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise EditError(f"the file is not valid YAML ({exc.__class__.__name__})") from None
    if original is None:
        original = {}
    if not isinstance(original, dict):
        raise EditError("the file is not a mapping at the top level")
    if "\t" in text:
        raise EditError("the file is indented with tabs")
    lines = text.splitlines()
    for op in ops:
        if op.kind == "set":
            _set(lines, op.path, op.value)
        elif op.kind == "add":
            _add(lines, op.path, op.value)
        elif op.kind == "remove":
            _remove(lines, op.path, op.value)
        elif op.kind == "delete":
            _delete(lines, op.path)
        else:
            raise ValueError(f"unknown op {op.kind}")
    out = "\n".join(lines) + "\n"
    try:
        parsed = yaml.safe_load(out) or {}
    except yaml.YAMLError:
        raise EditError("the edited text would not parse") from None
    if parsed != apply_to_data(original, ops):  # ShapeError from here reaches the caller
        raise EditError("the edited text would not parse to the intended data")
    return out


def edit_config(text: str, ops: Sequence[Op]) -> tuple[str, bool]:
    """(new text, comments kept?). Falls back to a full dump when the minimal edit is not safe."""
    try:
        return edit_text(text, ops), True
    except EditError:
        original = yaml.safe_load(text) if text.strip() else {}  # invalid YAML: yaml.YAMLError to the caller
        if original is not None and not isinstance(original, dict):
            raise ShapeError("the file is not a mapping at the top level") from None
        data = apply_to_data(original or {}, ops)
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False), False


def get_path(data: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data
