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
    assert not [n for n in modules if Path(n).name.startswith("test_") or Path(n).name == "testing.py"]
    assert "kplace/solver/cli.py" in names and "kplace/solver/plugins/defaultpreemption/encoding.py" in names
    assert "kplace/instances/demo-cluster.json" in names  # the shipped instances the README's command runs
