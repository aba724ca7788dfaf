"""Every row of the fault table recovers: one line on stderr, the documented exit status, an identical store.

The rows are in ``fault_table.py`` (which also prints the table of docs/explanation/store-protocol.md);
SIGKILL and SIGTERM to the driver have their own, more detailed tests in ``test_resume.py`` and ``test_faults.py``.
"""

from __future__ import annotations

import re
import subprocess
from typing import Iterator

import pytest

from tests.integration.fault_table import ROWS, Bench

pytestmark = pytest.mark.slow

EXPECTED = {                       # row: (exit status, what the one line must say)
    "sigint_group": (130, r"^rmtsweep: interrupted; finished tasks are in the store: rerun the same command"),
    "sigint_while_starting": (130, r"^rmtsweep: interrupted; finished tasks are in the store: rerun the same "
                                   r"command"),
    "bad_scheduler": (2, r"^rmtsweep: error: --scheduler localhost: no port; give one, e\.g\. tcp://localhost:8786$"),
    "batch_system_down": (1, r"^rmtsweep: error: slurm worker job not submitted: sbatch: error: Batch job submission "
                             r"failed: Unable to contact slurm controller \(connect failure\)$"),
    "absent_chunk": (1, r"absent\.zarr: delta=\S+ gamma=\S+ T=\d+ replicates \d+-\d+: marked done but its overlap "
                        r"chunk is absent \(done without data\)$"),
    "read_only_workers": (1, r"^rmtsweep: error: \S+mixed\.zarr\S*: Read-only file system \(a worker writing task"),
    "corrupt_chunk": (2, r"corrupt\.zarr: delta=\S+ gamma=\S+ T=\d+ replicates \d+-\d+: eigenvalues chunk is "
                         r"corrupt .*run `rmtsweep verify \S+ --repair`"),
    "corrupt_theory": (2, r"theory\.zarr: theory array theory_edge: chunk theory_edge/\S+ is corrupt \(its checksum "
                          r"does not match\); `rmtsweep verify \S+ --repair` rewrites it from the store's sweep$"),
    "damaged_array_metadata": (2, r"^rmtsweep: error: \S+zarray\.zarr: metadata overlap/\.zarray is empty; "
                                  r"`rmtsweep verify \S+ --repair` rebuilds it from its other copy$"),
    "stray_document": (2, r"^rmtsweep: error: \S+stray\.zarr: cannot read its metadata \(\.zmetadata is empty\); "
                          r"`rmtsweep verify \S+ --repair` rebuilds it from its other copy$"),
    "disk_full": (1, r"^rmtsweep: error: \S+full\.zarr\S*: No space left on device .*rerun the same command"),
    "read_only": (1, r"^rmtsweep: error: \S+readonly\.zarr: Read-only file system$"),
    "permission_denied": (1, r"^rmtsweep: error: \S+denied\.zarr\S*: Permission denied"),
    "vanished_store": (1, r"^rmtsweep: error: \S+vanished\.zarr\S*: (No such file or directory|the store was "
                          r"removed while the run wrote it)"),
    "reader_while_writing": (0, r"^$"),
}
NAMESPACES = {"disk_full": ["-m"], "read_only": ["-m"], "read_only_workers": ["-m"], "permission_denied": ["-U"]}


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Iterator[Bench]:
    bench = Bench(tmp_path_factory.mktemp("faults"))
    yield bench
    bench.close()


@pytest.mark.parametrize("name", list(EXPECTED))
def test_fault_recovers_with_one_line_and_an_identical_store(bench, name):
    if name in NAMESPACES and subprocess.run(["unshare", *NAMESPACES[name], "true"], capture_output=True).returncode:
        pytest.skip(f"unshare {NAMESPACES[name][0]} is not permitted here")
    row = ROWS[name](bench)
    code, message = EXPECTED[name]
    assert row.exit_code == code, row
    assert re.search(message, row.message), row.message
    assert row.one_line, row.noise
    assert not row.without_data, f"{row.fault}: done without data right after the fault: {row.without_data[:3]}"
    assert row.identical, f"{row.fault}: the recovered store differs from an uninterrupted run"


def test_the_table_lists_every_row_the_test_does_not_skip():
    assert set(EXPECTED) | {"sigkill_three_times", "sigterm_driver"} == set(ROWS)
