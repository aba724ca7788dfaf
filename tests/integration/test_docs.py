"""The documentation: the site builds with warnings as errors, its links resolve, its math renders, and the pages
say what the code does (every public name has an API page, every sweep field and weights scheme is documented).

The site is built once for the module (``sphinx-build -W --keep-going``, as ``.ci/run`` does), into a temporary
directory; it needs the ``docs`` extra (``pip install -e '.[docs]'``) and is skipped without it. The math test
needs a headless Chromium (``requires_chromium``), run without network as in ``test_browser.py``.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from tests.helpers import chromium

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for package in ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme", "jupyter_server_mathjax"):
        pytest.importorskip(package, reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return out / "html"


class _Page(HTMLParser):
    """A built page's links, ids, and visible text (outside <script> and <style>)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for key in ("href", "src"):
            if attrs.get(key) and not (tag == "link" and attrs.get("rel") in ("preload", "prefetch")):
                self.links.append(attrs[key])
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._hidden = max(0, self._hidden - 1)

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def test_the_site_has_every_page_and_a_search_box(site):
    for page in ("index", "getting-started", "user-guide/sweep-files", "user-guide/running", "user-guide/clusters",
                 "user-guide/stores", "user-guide/comparison", "user-guide/python-api", "analysis",
                 "explanation/store-protocol", "explanation/seeding", "explanation/security", "theory", "results",
                 "gallery", "performance", "reference", "changelog", "contributing"):
        assert (site / f"{page}.html").exists(), page
    assert (site / "search.html").exists() and (site / "searchindex.js").exists()
    assert 'type="search"' in (site / "index.html").read_text()


def test_no_page_shows_raw_markup_or_a_table_as_text(site):
    """A directive MyST did not run, or a table whose rows and header disagree, shows as text on the page."""
    raw = (".. list-table", ":header-rows:", "```{", "{eval-rst}", "{list-table}")
    shown = []
    for page in site.rglob("*.html"):
        if "_static" in page.relative_to(site).parts:
            continue
        text = "".join(_parse(page.read_text()).text)
        shown += [f"{page.relative_to(site)}: {marker!r}" for marker in raw if marker in text]
        shown += [f"{page.relative_to(site)}: {line.strip()[:60]!r}" for line in text.splitlines()
                  if line.strip().startswith("|---") or line.strip().startswith("| ---")]
    assert not shown, "\n".join(shown[:40])
    sweep_files = (site / "user-guide" / "sweep-files.html").read_text()
    assert sweep_files.count("<table") >= 3, "the field, correlation and weights tables"


def test_the_analysis_page_shows_what_its_notebook_computes(site):
    """The notebook runs at build: its page holds the cells' outputs, the phase plot and the map among them."""
    page = (site / "analysis.html").read_text()
    assert page.count("cell_output") >= 8
    assert len(re.findall(r'<img[^>]+src="_images/[0-9a-f]{16,}\.png"', page)) >= 2
    assert "tasks, " in page and " points in " in page        # the run cell's printed line


def test_every_relative_link_of_the_site_resolves(site):
    """Every relative href and src of every built page names a file of the site, and its #fragment an id there."""
    pages = {p: _parse(p.read_text()) for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts}
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link}")
            elif parts.fragment and target.suffix == ".html" and target in pages and \
                    parts.fragment not in pages[target].ids:
                broken.append(f"{page.relative_to(site)}: {link} (no such id)")
    assert not broken, "\n".join(broken[:40])


def test_the_readme_links_resolve():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, missing


def test_every_public_name_has_an_api_page(site):
    import rmtsweep
    from rmtsweep.analysis.accessor import RmtAccessor

    missing = [name for name in rmtsweep.__all__
               if name != "__version__" and not (site / "generated" / f"rmtsweep.{name}.html").exists()]
    assert not missing, missing
    accessor = (site / "generated" / "rmtsweep.analysis.accessor.RmtAccessor.html").read_text()
    methods = [name for name in vars(RmtAccessor) if not name.startswith("_")]
    assert methods and all(f"RmtAccessor.{name}" in accessor for name in methods), methods


def _weights_schemes_in(path: Path) -> set[str]:
    grid = (yaml.safe_load(path.read_text()) or {}).get("grid", {})
    entries = grid.get("weights", [])
    entries = [entries] if isinstance(entries, (str, dict)) else entries
    return {e if isinstance(e, str) else e["scheme"] for e in entries}


def _documented_schemes(text: str) -> set[str]:
    """The schemes a page documents: its bullets that start with a scheme's name, `mean` or `causal(tau)`."""
    return set(re.findall(r"^- `(\w+)(?:\([^`]*\))?`", text, flags=re.M))


def test_every_weights_scheme_of_a_shipped_sweep_is_documented():
    from rmtsweep.model.schemes import SCHEMES

    shipped = set().union(*(_weights_schemes_in(p) for p in (ROOT / "sweeps").rglob("*.yaml")))
    every = {cls.model_fields["scheme"].default for cls in SCHEMES}
    assert shipped and shipped <= every
    theory = (DOCS / "theory.md").read_text().split("## 2. The weights schemes", 1)[1].split("\n## ", 1)[0]
    guide = (DOCS / "user-guide" / "sweep-files.md").read_text()
    for page, text in (("docs/theory.md §2", theory), ("docs/user-guide/sweep-files.md", guide)):
        missing = sorted(shipped - _documented_schemes(text))
        assert not missing, f"{page} does not document the schemes {missing} that shipped sweeps use"
    assert not every - _documented_schemes(theory) - {"custom", "python"} - _documented_schemes(guide)


def _fields(model, prefix: str = "") -> set[str]:
    from pydantic import BaseModel

    out = set()
    for name, field in model.model_fields.items():
        out.add(prefix + name)
        sub = field.annotation
        for candidate in (sub, *getattr(sub, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel) and name in ("grid", "observables"):
                out.discard(prefix + name)                   # documented through its fields
                out |= _fields(candidate, f"{prefix}{name}.")
    return out


def test_every_field_of_a_sweep_file_is_documented():
    from rmtsweep.spec import Sweep

    table = (DOCS / "user-guide" / "sweep-files.md").read_text().split("## Every field", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([\w.]+)` \|", table, flags=re.M))
    assert _fields(Sweep) == documented


def _sentences(markdown: str) -> list[str]:
    """The prose sentences of a Markdown page: code blocks, tables, headings and images left out."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    lines = [line for line in text.splitlines()
             if line.strip() and not line.startswith(("    ", "|", "#", "!["))]
    prose = re.sub(r"`[^`]*`", "X", " ".join(lines))
    return [s for s in re.split(r"(?<=[.!?])\s+", prose) if len(s.split()) > 1]


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    assert statistics.median(len(s.split()) for s in _sentences(text)) <= 25
    install = "python -m pip install -e . && rmtsweep demo"
    tests = "python -m pip install -e '.[test]' && python -m pytest -n auto"
    assert f"    {install}\n    {tests}\n" in text
    assert "python -m pip install -q -e '.[test]' && python -m pytest -n auto" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.requires_chromium
@pytest.mark.parametrize("page", ["index", "theory"])
def test_the_math_renders_offline(site, page, tmp_path):
    """In a headless Chromium without network, MathJax (shipped in the site) typesets every formula of the page:
    the DOM holds its output, no error, and no raw TeX is left in the page's text. The screenshot is kept."""
    import matplotlib.image as mpimg

    unshare = shutil.which("unshare")
    prefix = [unshare, "-n"] if unshare and subprocess.run([unshare, "-n", "true"]).returncode == 0 else []
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
             "--virtual-time-budget=15000", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    url = (site / f"{page}.html").as_uri()
    dom = subprocess.run([*prefix, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    source = (site / f"{page}.html").read_text()
    formulas = source.count('class="math notranslate nohighlight"')
    assert formulas > 0, f"{page}.html has no math to render"
    assert 'class="MathJax_Error"' not in dom, "MathJax could not typeset a formula"
    rendered = len(re.findall(r'<span class="MathJax"|<div class="MathJax_Display"', dom))
    assert rendered >= formulas, f"{rendered} of {formulas} formulas typeset"
    text = " ".join(_parse(dom).text)
    for raw in ("\\frac", "\\(", "\\[", "$$", "\\kappa", "\\rho"):
        assert raw not in text, f"raw TeX {raw!r} left in the text of {page}.html"
    shot = tmp_path / f"{page}.png"
    subprocess.run([*prefix, *flags, "--window-size=1100,1400", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120)
    assert shot.exists()
    assert mpimg.imread(shot)[..., :3].std() > 0.05, "blank screenshot"
    keep = ROOT / "docs" / "_build" / "screenshots"       # for a person to look at (docs/_build is not committed)
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, keep / shot.name)


def test_the_math_asks_for_no_font_the_site_lacks():
    """The site ships MathJax's STIX-Web fonts only; a double-struck, Fraktur or script letter makes MathJax's
    hidden MathML copy ask for its TeX AMS font, which is a 404 on the offline site."""
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    found = [f"{p.relative_to(ROOT)}: {m}" for p in pages
             for m in re.findall(r"\\(?:mathbb|mathfrak|mathscr)\b", p.read_text())]
    assert not found, found
    static = Path(__import__("jupyter_server_mathjax").__file__).parent / "static" / "fonts" / "HTML-CSS"
    assert sorted(p.name for p in static.iterdir()) == ["STIX-Web"]


def test_the_gallery_shows_every_picture_with_its_command():
    """Every PNG in docs/ is in the gallery, each followed by the shell command that makes it."""
    text = (DOCS / "gallery.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    shown = {}
    for section in sections:
        for image in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", section):
            shown[image] = re.search(r"```bash\n.*rmtsweep .*\n", section, flags=re.S) is not None
    assert set(shown) == {p.name for p in DOCS.glob("*.png")}
    assert all(shown.values()), [image for image, has in shown.items() if not has]


def test_the_gallery_names_the_files_where_figures_writes_them():
    """``rmtsweep figures S.zarr --out DIR`` writes ``DIR/S/fig-*.png``; the gallery's comments say that path."""
    figures_py = (ROOT / "pipeline" / "analysis" / "figures.py").read_text()
    said = re.findall(r"rmtsweep figures store/([\w.-]+)\.zarr --out (\S+?)/?\s+# (\S+)", (DOCS / "gallery.md").read_text())
    assert len(said) >= 5
    for stem, out, path in said:
        assert path == f"{out}/{stem}/{Path(path).name}", path
        assert f'"{Path(path).name}"' in figures_py, path


def test_the_pages_keep_their_sentences_short():
    """The median sentence of every page of the site, as of the README, is at most 25 words."""
    pages = [README, ROOT / "deploy" / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
             *(p for p in DOCS.rglob("*.md") if not {"_build", "generated", "plugin-example"} & set(p.parts))]
    long = {}
    for page in pages:
        sentences = _sentences(page.read_text())
        if sentences and (median := statistics.median(len(s.split()) for s in sentences)) > 25:
            long[str(page.relative_to(ROOT))] = median
    assert not long, long
