"""The exported HTML map renders in headless Chromium with no network access.

Needs Debian's ``chromium`` and ``fonts-dejavu-core`` (``.ci/run`` installs them). Chromium runs in
a fresh network namespace (``unshare -n``, no interfaces but loopback) when that is allowed, so a
page that fetched its scripts from a CDN would render blank; otherwise it runs with background
networking disabled and the page's own offline-ness is checked by ``test_plots``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest


from tests.helpers import chromium

CHROMIUM = chromium()
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
         "--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=700,500"]

pytestmark = pytest.mark.requires_chromium


def _no_network_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def test_html_map_renders_offline(tiny_store, tmp_path):
    import matplotlib.image as mpimg

    from rmtsweep.analysis.maps.plot import plot
    html, _ = plot(tiny_store, "snr", "gamma", "overlap", select={"delta": "0.5", "weights": "mean"}).save(tmp_path / "maps")
    shot = tmp_path / "shot.png"
    cmd = _no_network_prefix() + [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                                  f"--screenshot={shot}", html.resolve().as_uri()]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert shot.exists(), f"no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    img = mpimg.imread(shot)[..., :3]
    assert img.std() > 0.05, "screenshot is blank"
    chroma = img.max(axis=-1) - img.min(axis=-1)
    coloured = float((chroma > 0.25).mean())
    # the viridis-mapped quadmesh covers a good part of the 700x500 page (axes and text are grey)
    assert coloured > 0.03, f"only {coloured:.1%} of the page is colour-mapped"
    assert len(np.unique((img[chroma > 0.25] * 255).astype(int), axis=0)) > 3   # several colours, not one


def _shot(html: Path, shot: Path, profile: Path, size: str) -> np.ndarray:
    import matplotlib.image as mpimg

    flags = [f for f in FLAGS if not f.startswith("--window-size")] + [f"--window-size={size}"]
    cmd = _no_network_prefix() + [CHROMIUM, *flags, f"--user-data-dir={profile}", f"--screenshot={shot}",
                                  html.resolve().as_uri()]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert shot.exists(), f"no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    return mpimg.imread(shot)[..., :3]


@pytest.mark.parametrize("x, y, var", [("delta", "gamma", "eigenvalues"),    # 8 panels with transitions, legends
                                       ("snr", "T", "overlap")])            # 8 panels titled by three facets
def test_faceted_html_fits_a_1400px_window(tiny_store, tmp_path, x, y, var):
    """Shot 1800 px wide, the page draws nothing right of x = 1400, yet its third column is there."""
    from rmtsweep.analysis.maps.plot import plot
    (html,) = plot(tiny_store, x, y, var).save(tmp_path / "maps", widgets=False, formats="html")
    img = _shot(html, tmp_path / "wide.png", tmp_path / "profile", "1800,900")
    ink = img.min(axis=-1) < 0.9                                # anything not (near) white
    cols = np.flatnonzero(ink.any(axis=0))
    assert cols.max() < 1400, f"the page is {cols.max() + 1} px wide"
    chroma = img.max(axis=-1) - img.min(axis=-1)
    assert (chroma[:, 900:1400] > 0.25).mean() > 0.05, "no third column of colour-mapped panels"
    img = _shot(html, tmp_path / "fit.png", tmp_path / "profile", "1400,900")
    assert (img.max(axis=-1) - img.min(axis=-1) > 0.25).mean() > 0.1, "the page at 1400x900 is mostly blank"
