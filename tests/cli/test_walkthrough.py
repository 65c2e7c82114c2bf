"""The user guide's walkthrough runs as written, and the outputs it shows are what the commands print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_user_guides_commands_run_as_written_and_print_what_the_guide_shows():
    res = subprocess.run([sys.executable, str(ROOT / "docs" / "walkthrough.py"), "--check"], capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    guide = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("walkthrough", ROOT / "docs" / "walkthrough.py")
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    for _, command in mod.STEPS:
        assert command in guide, command
