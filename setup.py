"""Build hook (the metadata is in pyproject.toml): wheels carry the Hermes plugin, the skill and the packaged
profiles as package data under `automem/_bundled/`, copied at build time from the repository's top-level
`hooks/`, `skills/` and `profiles/`, which stay their only copy. An sdist carries those folders as they are
(MANIFEST.in), so a wheel built from it is the same. Editable installs copy nothing: `automem install` reads the
checkout (automem.hermes.install.find_sources)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BUNDLED = {  # repository folder -> where it goes inside the package
    "hooks/automem": "automem/_bundled/hooks/automem",
    "skills/automem": "automem/_bundled/skills/automem",
    "profiles": "automem/_bundled/profiles",
}
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".DS_Store")


class build_py_with_bundle(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for src, dest in BUNDLED.items():
            source = HERE / src
            if not source.is_dir():
                raise SystemExit(f"setup.py: {source} is missing; build from a checkout or a complete sdist")
            target = Path(self.build_lib) / dest
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=SKIP)


setup(cmdclass={"build_py": build_py_with_bundle})
