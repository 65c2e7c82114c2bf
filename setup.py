"""Packaging hook (the rest is in pyproject.toml): the wheel ships the product only. The plugin folders' test
modules (`test_*.py`) and the test builders (`testing.py`) stay in the source tree, where an editable install and
the test suite see them."""

from setuptools import setup
from setuptools.command.build_py import build_py


class ProductOnly(build_py):
    def find_package_modules(self, package, package_dir):
        return [(pkg, mod, path) for pkg, mod, path in super().find_package_modules(package, package_dir)
                if not (mod.startswith("test_") or mod == "testing")]


setup(cmdclass={"build_py": ProductOnly})
