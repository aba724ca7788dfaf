"""``python -m rmtsweep.cli``: the ``rmtsweep`` command."""

from . import script

__all__: list[str] = []

if __name__ == "__main__":
    script()
