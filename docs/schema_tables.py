"""The tables of correlation models and weights schemes in docs/user-guide/sweep-files.md, from the code.

    python docs/schema_tables.py           # rewrite the tables in the page
    python docs/schema_tables.py --check   # exit 1 if the page's tables differ from the code's

Each table is a Markdown pipe table between two comment lines, so Sphinx (MyST) and GitHub both render it.
Its rows come from the pydantic classes: the tag, the fields with their defaults, and the docstring's first
paragraph.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pydantic_core import PydanticUndefined

PAGE = Path(__file__).resolve().parent / "user-guide" / "sweep-files.md"
KINDS = ("correlation", "weights")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(kind: str) -> str:
    """The Markdown table of the correlation models (``kind="correlation"``) or weights schemes."""
    from rmtsweep.model import correlation
    from rmtsweep.model.schemes import SCHEMES
    if kind == "weights":
        classes, tag = list(SCHEMES), "scheme"
    else:
        base = correlation.Correlation
        classes = [c for c in vars(correlation).values() if isinstance(c, type) and issubclass(c, base) and c is not base]
        tag = "model"
    rows = [f"| `{tag}` | parameters | what it is |", "| --- | --- | --- |"]
    for cls in classes:
        fields = cls.model_fields
        params = [f"`{k}`" + ("" if v.default is PydanticUndefined else f" (default `{v.default!r}`)")
                  for k, v in fields.items() if k not in (tag, "name")]
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        rows.append(f"| `{fields[tag].default}` | {_cell(', '.join(params) or '(none)')} | {_cell(doc)} |")
    return "\n".join(rows)


def _markers(kind: str) -> tuple[str, str]:
    return (f"<!-- {kind} table: made by docs/schema_tables.py -->", f"<!-- end of the {kind} table -->")


def rewrite(text: str) -> str:
    """``text`` (the page) with each table between its markers replaced by the code's."""
    for kind in KINDS:
        begin, end = _markers(kind)
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise SystemExit(f"{PAGE}: no '{begin}' ... '{end}' block")
        text = pattern.sub(lambda _: f"{begin}\n{table(kind)}\n{end}", text)
    return text


if __name__ == "__main__":
    old = PAGE.read_text(encoding="utf-8")
    new = rewrite(old)
    if "--check" in sys.argv[1:]:
        if new != old:
            sys.exit(f"{PAGE}: its tables differ from the code's; run python docs/schema_tables.py")
    elif new != old:
        PAGE.write_text(new, encoding="utf-8")
        print(f"rewrote the tables in {PAGE}")
