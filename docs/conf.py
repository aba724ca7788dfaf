"""Sphinx configuration of the rmtsweep site.

Build it with ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (``pip install -e '.[docs]'`` first),
then serve it with ``python -m http.server -d docs/_build/html``. The site works offline: MathJax's files come
from the ``jupyter-server-mathjax`` package and are copied into the site.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import rmtsweep

project = "rmtsweep"
author = "the rmtsweep authors"
copyright = "2026, the rmtsweep authors"
release = rmtsweep.__version__
version = release.split("+")[0]

extensions = [
    "myst_nb",                     # Markdown pages (MyST) and docs/analysis.ipynb
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}   # .rst: autosummary's pages
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "plugin-example", "**.ipynb_checkpoints", "*_tables.py"]
suppress_warnings = ["myst.header"]   # a page's headings may start below H1 inside an included file

# MyST: $...$ and $$...$$ math, ::: fences, heading anchors for links such as page.md#store-protocol
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# The notebook runs at build, so its page shows what it computes; jupyter-cache keeps the outputs under
# docs/_build until its code changes (a second build, such as the docs test's, reuses them).
nb_execution_mode = "cache"
nb_execution_cache_path = str(Path(__file__).resolve().parent / "_build" / ".jupyter_cache")
nb_execution_timeout = 600
nb_execution_raise_on_error = True
# The interactive map's loader outputs (holoviews' own MIME types) have no static form; the page shows its PNG.
suppress_warnings = ["mystnb.unknown_mime_type"]

# API reference: one page per public name (docs/reference.md), from numpydoc docstrings
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"         # the signatures show the hints; numpydoc shows the docstrings
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# Math, offline: MathJax 2 from the jupyter-server-mathjax package, copied into _static/mathjax at the build. The
# package ships the combined configuration below (TeX input, HTML-CSS output) and the STIX-Web fonts.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]], "processEscapes": True,
                "ignoreClass": "document", "processClass": "math|output_area"},
    "HTML-CSS": {"availableFonts": ["STIX-Web"], "preferredFont": "STIX-Web", "webFont": "STIX-Web",
                 "imageFont": None},
    "messageStyle": "none",
}

html_theme = "pydata_sphinx_theme"
html_title = f"rmtsweep {version}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 1,           # the long pages' "On this page" lists their sections; subsections open on scroll
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# Pages without children of their own get no left sidebar, which would be empty
html_sidebars = {page: [] for page in ("index", "getting-started", "theory", "results", "gallery", "performance",
                                       "reference", "glossary", "changelog", "contributing")}
html_last_updated_fmt = None
html_show_sourcelink = False


def _mathjax(app, exception) -> None:
    """Copy MathJax's files into the built site (the HTML builders only)."""
    if exception is not None or app.builder.format != "html":
        return
    import jupyter_server_mathjax
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = Path(app.outdir) / "_static" / "mathjax"
    if not (target / "MathJax.js").exists():
        shutil.copytree(source, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.eot", "*.otf"))


def setup(app) -> None:
    app.connect("build-finished", _mathjax)
