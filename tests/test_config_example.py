"""config.yaml.example shows every key of automem.config.Config, at its default, and loads cleanly."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import yaml

from automem.config import Config, load_config
from automem.paths import Location

EXAMPLE = Path(__file__).resolve().parent.parent / "config.yaml.example"
INTERNAL = ("warnings", "sources")


def test_every_config_key_is_in_the_example_and_nothing_else():
    section = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["automem"]
    keys = {f.name for f in dataclasses.fields(Config) if f.name not in INTERNAL}
    assert set(section) == keys, f"missing: {sorted(keys - set(section))}, unknown: {sorted(set(section) - keys)}"


def test_the_example_loads_to_the_defaults_without_warnings(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(EXAMPLE, root / "config.yaml")
    cfg = load_config(Location(root, "default"), env={})
    assert cfg.warnings == []
    assert cfg == Config(), "a value in config.yaml.example differs from its default in automem/config.py"


def test_every_key_has_a_comment_nearby():
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    keys = {f.name for f in dataclasses.fields(Config) if f.name not in INTERNAL}
    for i, line in enumerate(lines):
        key = line.strip().split(":", 1)[0]
        if line.startswith("  ") and not line.startswith("   ") and key in keys:
            context = "\n".join(lines[max(0, i - 3):i + 2])
            assert "#" in context, f"automem.{key} has no explanation near it"
