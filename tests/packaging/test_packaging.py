"""The wheel ships every package (every folder with an __init__.py under the mapped folders) and no test module."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_the_product_and_no_test_module(tmp_path):
    import shutil
    import subprocess
    import sys
    import zipfile

    src = tmp_path / "src"  # a copy, so the build leaves no build/ folder in the tree
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "oracle", "__pycache__",
                                                             "*.egg-info", "benchmarks", "docs"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(src)],
                   check=True, timeout=600)
    (wheel,) = tmp_path.glob("kplace-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = [n for n in names if n.endswith(".py")]
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for name, folder in mapping.items():  # every package folder, a plugin added without a packaging line included
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            assert "/".join([*name.split("."), *rel.parts, "__init__.py"]) in names
    assert not [n for n in modules if Path(n).name.startswith("test_") or Path(n).name == "testing.py"]
    assert "kplace/solver/cli.py" in names and "kplace/solver/plugins/defaultpreemption/encoding.py" in names
    assert "kplace/instances/demo-cluster.json" in names  # the shipped instances the README's command runs
