"""The manifests in deploy/ are the ones docs/deploy.md shows: each file appears there, after a line naming it, as
one YAML block equal to the file, so the two cannot drift. Applying them to a cluster is tests/e2e/test_deploy.py."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SHOWN = re.compile(r"^`(deploy/[\w.-]+)`:\n\n```yaml\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _shown() -> dict[str, str]:
    found: dict[str, str] = {}
    for path, text in SHOWN.findall((ROOT / "docs" / "deploy.md").read_text()):
        assert path not in found, f"docs/deploy.md shows {path} twice"
        found[path] = text
    return found


def test_every_file_in_deploy_is_shown_in_docs_deploy_md_exactly_as_it_is():
    files = {f"deploy/{p.name}": p.read_text() for p in sorted((ROOT / "deploy").glob("*.yaml"))}
    assert files, "deploy/ holds no manifests"
    assert _shown() == files


def test_every_manifest_parses_and_each_document_names_its_kind_and_api_version():
    for path in sorted((ROOT / "deploy").glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert docs, path
        for doc in docs:
            assert doc.get("apiVersion") and doc.get("kind"), f"{path.name}: a document without apiVersion/kind"
