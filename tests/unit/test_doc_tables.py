"""The docs' Markdown tables: every row as wide as its header, and the generated ones current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", ROOT / "CHANGELOG.md",
                *(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)])
SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def columns(line: str) -> int:
    """The cells of a pipe-table row, as GitHub and MyST count them (escaped pipes and code spans kept whole)."""
    text = re.sub(r"`[^`]*`", "x", line.replace("\\|", "x")).strip()
    return len(text.strip("|").split("|"))


def tables(text: str) -> list[tuple[int, list[str]]]:
    """Each pipe table outside fenced code: its first line number and its lines."""
    lines, found, fenced, i = text.splitlines(), [], False, 0
    while i < len(lines):
        if lines[i].lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and "|" in lines[i] and i + 1 < len(lines) and SEPARATOR.match(lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            found.append((i + 1, lines[i:j]))
            i = j
            continue
        i += 1
    return found


def test_a_row_counts_the_cells_as_github_does():
    assert columns("| a | b |") == 2
    assert columns("| `x | y` | b \\| c |") == 2
    assert [n for n, _ in tables("text\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\n| c |\n|---|\n```\n")] == [3]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_row_of_every_table_is_as_wide_as_its_header(page):
    bad = [f"{page.relative_to(ROOT)}:{start + k}: {columns(line)} cells, the header has {columns(rows[0])}"
           for start, rows in tables(page.read_text(encoding="utf-8"))
           for k, line in enumerate(rows) if columns(line) != columns(rows[0])]
    assert not bad, "\n".join(bad)


def test_the_sweep_file_page_holds_the_codes_tables():
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "schema_tables.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page = (ROOT / "docs" / "user-guide" / "sweep-files.md").read_text(encoding="utf-8")
    from rmtsweep.model.schemes import SCHEMES
    for cls in SCHEMES:
        assert f"| `{cls.model_fields['scheme'].default}` |" in page
    assert "| `markov` | `r` |" in page
