"""The site's Performance page quotes the benchmarks' own tables: every row it shows is a row of
benchmarks/README.md (where the benchmark scripts' printed tables are kept), with the same numbers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|") and not set(line) <= set("|-: ")]


def test_every_row_of_the_performance_page_is_a_benchmark_row_with_its_numbers():
    bench = {tuple(row[:2]): row for row in table_rows((ROOT / "benchmarks/README.md").read_text())}
    page = table_rows((ROOT / "docs/performance.md").read_text())
    headers = {tuple(row[:2]) for row in page if not NUMBER.search(" ".join(row[2:]))}
    quoted = [row for row in page if tuple(row[:2]) not in headers]
    assert len(quoted) >= 10
    for row in quoted:
        assert tuple(row[:2]) in bench, f"not a row of benchmarks/README.md: {row[:2]}"
        theirs = bench[tuple(row[:2])]
        for mine, source in zip(row[2:], theirs[2:]):
            assert NUMBER.findall(mine) == NUMBER.findall(source), (row[:2], mine, source)


def test_the_getting_started_page_quotes_the_demos_measured_time():
    """The demo's time on the Getting started page is the start benchmark's, on the machine it names."""
    bench = (ROOT / "benchmarks/README.md").read_text()
    assert "(2 worker processes; machine: 2 cores, load 1-3 from this benchmark alone)" in bench
    done = next(row for row in table_rows(bench) if row[0] == "demo" and len(row) == 11)[6]
    page = (ROOT / "docs/getting-started.md").read_text()
    assert f"On an idle 2-core machine its run took {done} s" in page
