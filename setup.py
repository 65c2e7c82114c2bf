"""Packaging hook (the rest is in pyproject.toml): the packages are every folder with an `__init__.py` under the
folders `[tool.setuptools.package-dir]` maps (so a new plugin folder ships without a line here), and the wheel ships
the product only: the plugin folders' test modules (`test_*.py`) and the test builders (`testing.py`) stay in the
source tree, where an editable install and the test suite see them."""

import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def product_packages() -> list[str]:
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    out = []
    for name, folder in mapping.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder)
            if "__pycache__" not in rel.parts:
                out.append(".".join([name, *rel.parts]))
    return out


class ProductOnly(build_py):
    def find_package_modules(self, package, package_dir):
        return [(pkg, mod, path) for pkg, mod, path in super().find_package_modules(package, package_dir)
                if not (mod.startswith("test_") or mod == "testing")]


setup(packages=product_packages(), cmdclass={"build_py": ProductOnly})
