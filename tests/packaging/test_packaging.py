"""The wheel ships every package: pyproject's explicit package list covers every folder with an __init__.py."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_python_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    on_disk = set()
    for name, folder in mapping.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            on_disk.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
