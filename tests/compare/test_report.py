"""The HTML report loads and shows its plots: every <img> is an inline PNG that decodes; nothing is fetched from
the network; with Chromium installed, the page also renders headless (skipped without it)."""

import base64
import io
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest
from kplace.solver.compare.report import write_report


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.refs, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(a)
        for key in ("src", "href"):
            if key in a and tag != "img":
                self.refs.append(a[key])


@pytest.fixture(scope="module")
def report(comparison, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return write_report(comparison, out)


def test_every_image_is_an_inline_png_that_decodes(report):
    import matplotlib.image as mpimg

    page = _Page()
    page.feed(report["html"].read_text(encoding="utf-8"))
    alts = [img.get("alt") for img in page.imgs]
    assert alts == ["Pods placed per priority", "Per-node allocation", "Allocation histograms",
                    "CP-SAT objective and bound over time"]
    for img in page.imgs:
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix)
        raw = base64.b64decode(img["src"][len(prefix):], validate=True)
        assert raw[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = mpimg.imread(io.BytesIO(raw), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100
        assert pixels.std() > 0.01  # not a blank image


def test_the_page_is_self_contained(report):
    text = report["html"].read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    assert "script" not in page.tags and "link" not in page.tags
    assert not page.refs
    assert "http://" not in text and "https://" not in text


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed")
def test_headless_chromium_renders_the_page_with_its_plots(report, tmp_path):
    import matplotlib.image as mpimg

    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             f"--screenshot={shot}", "--window-size=1200,2400", "--hide-scrollbars",
             report["html"].resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pixels = mpimg.imread(str(shot))
    assert pixels.shape[:2] == (2400, 1200)
    # the plots put colour on the page: many pixels far from white/grey (the engines' orange and blue)
    rgb = pixels[..., :3]
    coloured = ((rgb.max(axis=2) - rgb.min(axis=2)) > 0.3).mean()
    assert coloured > 0.01


def test_a_comparison_with_preemption_plots_both_engines_victims_per_priority(tmp_path):
    from kplace.models.index import ClusterIndex
    from kplace.solver.compare import CompareOptions, run_compare
    from kplace.solver.framework.config import default_config
    from kplace.solver.testing import build_snapshot, node, pod

    index = ClusterIndex(build_snapshot([node("a", cpu="2"), pod("low", cpu="2", node_name="a", priority=1),
                                         pod("high", cpu="2", priority=100)]))
    cmp = run_compare(index, default_config(), CompareOptions(time_limit=1, isolate=False))
    assert cmp.data["greedy"]["placement"]["evictions_by_priority"] == {"1": 1}
    page = _Page()
    page.feed(write_report(cmp, tmp_path)["html"].read_text())
    assert "Preemption victims per priority" in [img.get("alt") for img in page.imgs]
