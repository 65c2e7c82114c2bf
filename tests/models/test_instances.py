"""The shipped instances are exactly what the builder makes from ../shared/data (skipped when it is absent)."""

from pathlib import Path

import pytest
from kplace.instances import build

SHIPPED = Path(build.__file__).resolve().parent


@pytest.mark.skipif(not build.DEFAULT_DATA.is_dir(), reason="../shared/data is absent (a fresh clone)")
def test_rebuilding_the_instances_reproduces_the_shipped_files(tmp_path):
    assert build.main(["--out", str(tmp_path)]) == 0
    for name in build.INSTANCES:
        assert (tmp_path / name).read_text() == (SHIPPED / name).read_text(), name


def test_the_builder_keeps_the_shipped_files_when_the_data_is_absent(tmp_path, capsys):
    assert build.main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path)]) == 0
    assert list(tmp_path.iterdir()) == []
    assert "absent" in capsys.readouterr().err
