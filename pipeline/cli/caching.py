"""``cache``: the theory cache's folder, entries and size, and ``--clear`` to empty it."""

from __future__ import annotations

import click

from ._group import cli

__all__ = ["cache"]


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    power = min(3, (n.bit_length() - 1) // 10)
    return f"{n / 1024**power:.1f} {('KiB', 'MiB', 'GiB')[power - 1]}"


@cli.command()
@click.option("--clear", is_flag=True, help="Remove every entry of the cache.")
def cache(clear: bool) -> None:
    """Show the theory cache (setting rmtsweep.theory.cache): its folder, entries and size; --clear empties it.

    The cache holds the pooling matrix's seeded draws that a store's theory at its size computes, shared by every
    store; it never changes a result, and a missing folder is an empty cache."""
    from ..run.theory_cache import FolderCache, folder

    path = folder()
    if path is None:
        click.echo("theory cache: off (rmtsweep.theory.cache = none)")
        return
    if clear:
        removed = FolderCache(path).clear()
        click.echo(f"theory cache {path}: removed {removed} entr{'y' if removed == 1 else 'ies'}")
        return
    entries, size = FolderCache(path).usage()
    click.echo(f"theory cache {path}: {entries} entr{'y' if entries == 1 else 'ies'}, {_size(size)}")
