"""The Memory tab's files in the Hermes root, kept in step with the installs (`automem install` / `uninstall`,
`hermes memory setup automem`).

Facts from Hermes 0.19's dashboard (see the project's reference notes): it scans only `<root>/plugins/*/dashboard/`
of the home it was started from (not each profile's home), and serves a user plugin's tab and backend only when its
name is in that root config's `plugins.enabled`. The tab ships inside the plugin folder (`hooks/automem/dashboard/`),
so installing the default profile (whose home is the root) brings it along. When only other profiles have automem,
the root gets the tab alone (`plugins/automem/dashboard/`, no plugin.yaml: Hermes' agent loader skips a folder
without one) and `automem` in its `plugins.enabled`; when no profile of the root has automem any more, both go.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..errors import UsageError
from . import yaml_edit as Y
from .install import target_locations
from .plugin_files import PLUGIN_NAME, Sources, copy_tree, find_sources, installed_profiles, tab_dir
from .profile_config import change_config, read_config


def sync_tab(root: Path, sources: Sources | None) -> list[str]:
    """Make the root's Memory tab match the installs (see the module docstring). Returns the steps taken."""
    steps: list[str] = []
    plugin = tab_dir(root).parent
    full = (plugin / "__init__.py").is_file()  # the default profile's own install: the tab came with it
    config = root / "config.yaml"
    if installed_profiles(root):
        if not full:
            source = sources.plugin / tab_dir(root).name if sources is not None else None
            if source is None or not (source / "manifest.json").is_file():
                return ["Memory tab not installed: its files are missing from this automem (reinstall automem)"]
            if copy_tree(source, tab_dir(root)):
                steps.append(f"Memory tab copied to {tab_dir(root)} (the dashboard reads only the root's plugins)")
        change = change_config(config, [Y.add_item("plugins", "enabled", value=PLUGIN_NAME)])
        if change.changed:
            steps.append(f"{config}: plugins.enabled += {PLUGIN_NAME} (the dashboard serves only enabled plugins)"
                         + (f" (backup {change.backup})" if change.backup else ""))
        if steps:
            steps.append("restart `hermes dashboard` to see the Memory tab")
        return steps
    if full:
        return steps
    if plugin.is_dir():  # the tab alone, and no profile of the root has automem any more
        shutil.rmtree(plugin)
        steps.append(f"removed the Memory tab ({plugin})")
    if config.is_file():
        _, data = read_config(config)
        enabled = Y.get_path(data, "plugins", "enabled", default=[])
        if isinstance(enabled, list) and PLUGIN_NAME in enabled:
            change = change_config(config, [Y.remove_item("plugins", "enabled", value=PLUGIN_NAME)])
            if change.changed:
                steps.append(f"{config}: {PLUGIN_NAME} removed from plugins.enabled"
                             + (f" (backup {change.backup})" if change.backup else ""))
    return steps


def run_sync_tab(args) -> None:
    """After `automem install` / `uninstall`: sync the tab of the root those profiles belong to, and say so."""
    root = target_locations(args.hermes_home, None, False)[0].root
    try:
        sources = find_sources()
    except UsageError:
        sources = None
    steps = sync_tab(root, sources)
    if args.json:
        print(json.dumps({"dashboard_tab": steps, "root": str(root)}, ensure_ascii=False))
    elif steps:
        print(f"dashboard ({root}):\n" + "\n".join(f"  {s}" for s in steps))
