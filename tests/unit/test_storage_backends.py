"""The promises of the storage protocol (:class:`rmtsweep.store.backend.Location`), held by every backend.

:class:`LocationPromises` states them once; each subclass runs them on one backend: a directory on this
machine's file system, fsspec's memory filesystem, and an S3 bucket on the tests' moto server. A new backend
gets a subclass here and passes the same tests.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np
import pytest
import zarr

from rmtsweep.errors import StoreError
from rmtsweep.store.backend import NEW_SUFFIX, Location, PosixLocation
from rmtsweep.store.fence import Fenced
from rmtsweep.store.location import BACKENDS, locate


class LocationPromises:
    """What the store code relies on of a :class:`Location` (the lock, markers, metadata, zarr)."""

    concurrent_create = True
    """Whether exclusive creation is one step for writers in other threads and processes."""
    conditional_writes = False
    """Whether :meth:`Location.write_if` is one step (then chunk writes are fenced by versions)."""
    file_system = False
    """Whether the backend is a file system this machine reaches (journals, job arrays, ``demo``)."""

    @pytest.fixture
    def root(self) -> Location:
        """A fresh, empty directory or prefix of the backend."""
        raise NotImplementedError

    def test_an_absent_object_reads_as_none_and_does_not_exist(self, root):
        obj = root.child("absent.json")
        assert obj.read() is None
        assert not obj.exists()
        assert root.child("nothing").list() == []

    def test_exclusive_create_refuses_a_second_writer(self, root):
        obj = root.child("store.zarr.lock")
        assert obj.create(b"first")
        assert not obj.create(b"second")
        assert obj.read() == b"first" and obj.exists()

    def test_of_writers_creating_at_once_exactly_one_wins(self, root):
        if not self.concurrent_create:
            pytest.skip("this backend's exclusive create is not one step across threads")
        obj, start = root.child("raced.lock"), threading.Barrier(8)
        won: list[bytes] = []

        def take(i: int) -> None:
            data = f"writer {i}".encode()
            start.wait()
            if obj.create(data):
                won.append(data)

        threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1 and obj.read() == won[0]

    def test_a_replacement_is_read_whole_old_or_new(self, root):
        obj = root.child("beat.json")
        old, new = b"a" * 200_000, b"b" * 100_000
        obj.write(old)
        seen: set[bytes] = set()
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                seen.add(obj.read() or b"")

        reader = threading.Thread(target=read)
        reader.start()
        for i in range(10):
            obj.write(new if i % 2 == 0 else old)
        stop.set()
        reader.join()
        assert seen <= {old, new}
        assert obj.read() == old

    def test_write_creates_or_replaces(self, root):
        obj = root.child("marker")
        obj.write(b"1")
        obj.write(b"2")
        assert obj.read() == b"2"
        assert root.list() == ["marker"]             # no temporary object left beside it

    def test_remove_deletes_and_an_absent_object_is_no_error(self, root):
        obj = root.child("gone")
        obj.remove()
        obj.write(b"x")
        obj.remove()
        assert obj.read() is None and not obj.exists()

    def test_a_recursive_remove_deletes_everything_under_the_prefix(self, root):
        store = root.child("s.zarr")
        for key in (".zattrs", "done/0.0", "done/0.1"):
            store.child(key).write(b"x")
        keep = root.child("s.zarr.lock")
        keep.write(b"lock")
        assert store.exists()
        store.remove(recursive=True)
        assert not store.exists() and store.list() == []
        assert keep.read() == b"lock"                 # its sibling, whose name it prefixes, is kept

    def test_remove_if_deletes_only_what_was_judged(self, root):
        obj = root.child("stale.lock")
        assert not obj.remove_if(lambda raw: True)    # absent
        obj.write(b"live")
        assert not obj.remove_if(lambda raw: raw == b"stale")
        assert obj.read() == b"live"
        assert obj.remove_if(lambda raw: raw == b"live")
        assert obj.read() is None
        assert root.list() == []                      # nothing left aside

    def test_names_children_and_siblings(self, root):
        store = root.child("run.zarr")
        assert (store.name, store.stem) == ("run.zarr", "run")
        assert store.child(".zattrs").name == ".zattrs"
        lock = store.sibling("run.zarr.lock")
        assert lock.name == "run.zarr.lock"
        lock.write(b"x")
        assert root.child("run.zarr.lock").read() == b"x"
        assert str(root) in str(lock) and str(store) in str(store.child("a/b"))

    def test_siblings_match_names_beside_not_inside(self, root):
        store = root.child("demo.zarr")
        store.child(".zattrs").write(b"{}")
        for name in ("demo.zarr.share-0-of-2.lock", "demo.zarr.share-1-of-2.lock", "demo.zarr.lock", "other.lock"):
            root.child(name).write(name.encode())
        store.child("demo.zarr.share-9-of-9.lock").write(b"inside")
        found = store.siblings("demo.zarr.share-", "*-of-*.lock")
        assert sorted(f.name for f in found) == ["demo.zarr.share-0-of-2.lock", "demo.zarr.share-1-of-2.lock"]
        assert all(f.read() == f.name.encode() for f in found)

    def test_a_name_with_wildcards_is_a_name_not_a_pattern(self, root):
        pairs = [("a?.zarr", "a1.zarr"), ("b*.zarr", "bx.zarr"), ("c[1].zarr", "c1.zarr")]
        for name in (name for pair in pairs for name in pair):
            for obj in (root.child(name).child(".zattrs"), root.child(f"{name}.lock"),
                        root.child(f"{name}.share-0-of-2.lock"), root.child(f"{name}.lock.writer-t/x")):
                obj.write(name.encode())
        for odd, _ in pairs:
            store = root.child(odd)
            assert [f.name for f in store.siblings(f"{odd}.share-", "*-of-*.lock")] == [f"{odd}.share-0-of-2.lock"]
            assert [f.name for f in store.siblings(f"{odd}.lock.writer-")] == [f"{odd}.lock.writer-t"]
            assert store.list() == [".zattrs"] and store.child(".zattrs").exists()
            for beside in (f"{odd}.lock", f"{odd}.share-0-of-2.lock", f"{odd}.lock.writer-t"):
                store.sibling(beside).remove(recursive=True)
            store.remove(recursive=True)
            assert not store.exists() and store.sibling(f"{odd}.lock").read() is None
        plain = sorted(plain for _, plain in pairs)
        assert root.list() == sorted(f"{name}{key}" for name in plain
                                     for key in ("/.zattrs", ".lock", ".share-0-of-2.lock", ".lock.writer-t/x"))
        assert all(root.child(key).read() == f"{key.split('.zarr')[0]}.zarr".encode() for key in root.list())

    def test_zarr_overwrites_and_deletes_in_its_own_store_only(self, root):
        def write(name: str, mode: str) -> zarr.Array:
            group = zarr.open_group(root.child(name).zarr_store(read_only=False), mode=mode, zarr_format=2)
            array = group.create_array("x", shape=(4,), chunks=(2,), dtype="f8", fill_value=0.0, overwrite=True)
            array[:] = np.arange(1.0, 5.0)
            return array

        write("bx.zarr", "w")
        kept = {key: root.child("bx.zarr").child(key).read() for key in root.child("bx.zarr").list()}
        # an array takes zarr's config when it is opened: set here, whatever earlier tests of the process left
        with zarr.config.set({"array.write_empty_chunks": False}):
            odd = write("b*.zarr", "w")
            write("b*.zarr", "w")                   # overwrites the store it names
            odd[:2] = 0.0                           # a chunk of fill values is deleted
        assert "x/0" not in root.child("b*.zarr").list()
        assert {key: root.child("bx.zarr").child(key).read() for key in root.child("bx.zarr").list()} == kept

    def test_listing_gives_every_key_under_the_prefix_sorted(self, root):
        store = root.child("l.zarr")
        keys = ["done/1.0", ".zattrs", "done/0.0", "a/b/c", ".zmetadata"]
        for key in keys:
            store.child(key).write(key.encode())
        root.child("l.zarr.lock").write(b"beside")
        assert store.list() == sorted(keys)

    def test_copy_in_copies_keys_from_another_backend_and_from_itself(self, root, tmp_path):
        local = PosixLocation(tmp_path / "src")
        for key in (".zattrs", "x/0"):
            local.child(key).write(key.encode())
        first = root.child("first")
        first.copy_in(local, local.list())
        assert first.list() == [".zattrs", "x/0"] and first.child("x/0").read() == b"x/0"
        second = root.child("second")
        second.copy_in(first, [".zattrs"])
        assert second.list() == [".zattrs"]

    def test_zarr_writes_and_reads_through_the_store(self, root):
        store = root.child("z.zarr")
        group = zarr.open_group(store.zarr_store(read_only=False), mode="w", zarr_format=2)
        group.create_array("x", shape=(4,), chunks=(2,), dtype="f8", fill_value=np.nan)[:] = np.arange(4.0)
        back = zarr.open_group(store.zarr_store(), mode="r")
        np.testing.assert_array_equal(back["x"][...], np.arange(4.0))
        assert {".zgroup", "x/.zarray", "x/0", "x/1"} <= set(store.list())

    # --- how a store is written: creation, extension, recovery ----------------------------------------------

    @staticmethod
    def _tree(keys: dict[str, bytes]):
        def write(target: Location) -> None:
            for key, data in keys.items():
                target.child(key).write(data)
        return write

    def test_a_created_tree_is_whole_and_its_creation_not_cut(self, root):
        keys = {".zattrs": b"{}", "x/0": b"chunk", ".zmetadata": b"meta"}
        store = root.child("c.zarr")
        store.create_tree(self._tree(keys), made=lambda loc: False)
        assert {k: store.child(k).read() for k in store.list()} == keys
        assert not store.creation_cut()
        assert root.list() == sorted(f"c.zarr/{k}" for k in keys)      # nothing left beside it

    def test_a_creation_over_a_store_another_run_made_is_no_error(self, root):
        store = root.child("c.zarr")
        store.create_tree(self._tree({".zattrs": b"first", ".zmetadata": b"m"}), made=lambda loc: False)
        store.create_tree(self._tree({".zattrs": b"first", ".zmetadata": b"m"}), made=lambda loc: loc == store)
        assert store.child(".zattrs").read() == b"first" and store.list() == [".zattrs", ".zmetadata"]

    def test_a_failed_creation_is_one_line_and_leaves_nothing(self, root):
        def write(target: Location) -> None:
            target.child(".zattrs").write(b"{}")
            raise OSError(5, "Input/output error")

        store = root.child("f.zarr")
        with pytest.raises(StoreError, match=r"f\.zarr: cannot create the store \(.*Input/output error"):
            store.create_tree(write, made=lambda loc: False)
        assert root.list() == [] and not store.exists()

    def test_write_tree_writes_every_object_here(self, root):
        keys = {".zattrs": b"{}", "a/.zarray": b"{}", "a/0.0": b"x", ".zmetadata": b"m"}
        store = root.child("t.zarr")
        store.write_tree(self._tree(keys))
        assert {k: store.child(k).read() for k in store.list()} == keys

    def test_a_creation_cut_before_its_metadata_is_told_or_impossible(self, root):
        store = root.child("h.zarr")
        store.child(".zattrs").write(b"{}")              # what a creation in place leaves when it is cut
        assert store.creation_cut() is (not self.file_system)
        store.child(".zmetadata").write(b"m")
        assert not store.creation_cut()

    def test_replace_by_puts_the_new_store_in_place_and_leaves_nothing_beside(self, root):
        store, new = root.child("e.zarr"), root.child("e.zarr" + NEW_SUFFIX)
        self._tree({".zattrs": b"old", "x/0": b"old", "x/1": b"gone", ".zmetadata": b"old"})(store)
        self._tree({".zattrs": b"new", "x/0": b"new", "y/0": b"added", ".zmetadata": b"new"})(new)
        assert store.extension_cut()                     # the extension is being written beside it
        store.replace_by(new)
        assert {k: store.child(k).read() for k in store.list()} == {
            ".zattrs": b"new", ".zmetadata": b"new", "x/0": b"new", "y/0": b"added"}
        assert not store.extension_cut() and not new.exists()
        assert all(key.startswith("e.zarr/") for key in root.list())

    def test_recovery_drops_an_extension_that_was_never_committed(self, root):
        store, new = root.child("r.zarr"), root.child("r.zarr" + NEW_SUFFIX)
        self._tree({".zattrs": b"old", ".zmetadata": b"old"})(store)
        self._tree({".zattrs": b"new"})(new)             # killed while it was written
        assert store.extension_cut()
        store.recover_extension()
        assert not store.extension_cut() and not new.exists()
        assert {k: store.child(k).read() for k in store.list()} == {".zattrs": b"old", ".zmetadata": b"old"}
        store.recover_extension()                        # nothing to recover: no change
        assert store.list() == [".zattrs", ".zmetadata"]

    # --- conditional writes and fences ----------------------------------------------------------------------

    def test_write_if_replaces_only_the_version_seen(self, root):
        obj = root.child("chunk")
        assert root.conditional_writes is self.conditional_writes
        if not self.conditional_writes:
            pytest.skip("write_if and version() are promised only where conditional_writes holds")
        assert obj.version() is None
        assert obj.write_if(b"first", None)              # only if absent
        assert not obj.write_if(b"second", None) and obj.read() == b"first"
        seen = obj.version()
        assert seen is not None
        obj.write(b"another writer")
        assert obj.version() != seen
        assert not obj.write_if(b"stale", seen) and obj.read() == b"another writer"
        assert obj.write_if(b"fresh", obj.version()) and obj.read() == b"fresh"

    def test_a_fence_writes_for_its_holder_and_refuses_after_a_take_over(self, root):
        store, lock = root.child("s.zarr"), root.child("s.zarr.lock")
        store.child("x/.zarray").write(b"{}")          # the array's directory, as its template makes it
        lock.open_fence("old")
        fence = store.fence(lock, "old")
        if fence is None:                                # the check of the lock before each task is the fence
            assert not (self.file_system or self.conditional_writes)
            return
        fence.prepare(["x/0"])
        fence.put("x/0", b"1")
        assert store.child("x/0").read() == b"1"
        fence.prepare(["x/0"])                           # the old holder checked the lock, then stalled
        lock.open_fence("new")                           # a take-over: the new holder fences the old one out
        lock.fence_out("old")
        taker = store.fence(lock, "new")
        assert taker is not None
        taker.prepare(["x/0"])
        taker.put("x/0", b"2")
        with pytest.raises(Fenced):
            fence.put("x/0", b"late")
        assert store.child("x/0").read() == b"2"
        lock.fence_out("new")
        assert store.siblings("s.zarr.lock.writer-") == []
        assert root.list() == ["s.zarr/x/.zarray", "s.zarr/x/0"]

    # --- beside the store on this machine -------------------------------------------------------------------

    def test_a_job_is_given_an_address_that_locates_the_same_store(self, root):
        store = root.child("j.zarr")
        assert locate(store.job_address(), store.storage_options or None) == store
        assert store.local_directory().is_dir()

    def test_only_a_file_system_gives_a_path_and_takes_appended_lines(self, root):
        store = root.child("p.zarr")
        journal = store.sibling("p.zarr.journal")
        if not self.file_system:
            with pytest.raises(StoreError, match=r"p\.zarr: this command needs a store on a file system"):
                store.local()
            assert journal.open_lines() is None
            return
        assert store.local() == store and store.local_directory() == Path(store.absolute().parent)
        for line in ("run 0 submit a", "run 0 write a"):
            with journal.open_lines() as out:
                out.write(line + "\n")
        assert journal.read() == b"run 0 submit a\nrun 0 write a\n"


def test_locate_takes_a_url_to_the_backend_its_scheme_is_registered_to(monkeypatch):
    from rmtsweep.store.objectstore import FsspecLocation

    class Marked(FsspecLocation):
        """A second backend on fsspec's memory filesystem."""

    monkeypatch.setitem(BACKENDS, "memory", Marked)
    where = locate("memory://bucket/run.zarr")
    assert type(where) is Marked and where.url == "memory://bucket/run.zarr"
    assert type(locate("s3://bucket/run.zarr")) is FsspecLocation and type(locate("run.zarr")) is PosixLocation


class TestPosix(LocationPromises):
    """A directory of this machine's file system."""

    file_system = True

    @pytest.fixture
    def root(self, tmp_path) -> Location:
        loc = locate(tmp_path / "root")
        Path(loc).mkdir()
        assert isinstance(loc, PosixLocation) and loc.renames
        return loc


class TestMemory(LocationPromises):
    """fsspec's memory filesystem (one process's dict of objects)."""

    concurrent_create = False            # it checks, then creates: it stands in for storage no two writers share

    @pytest.fixture
    def root(self) -> Location:
        pytest.importorskip("fsspec")
        loc = locate(f"memory://rmtsweep-tests/{uuid.uuid4().hex}")
        assert not loc.renames
        yield loc
        loc.remove(recursive=True)


class TestS3(LocationPromises):
    """A bucket of the moto S3 server (conditional writes, no rename)."""

    conditional_writes = True

    @pytest.fixture(scope="class")
    def bucket(self, s3_endpoint) -> str:
        import s3fs
        s3fs.S3FileSystem(endpoint_url=s3_endpoint).mkdir("storage-promises")
        return s3_endpoint

    @pytest.fixture
    def root(self, bucket) -> Location:
        loc = locate(f"s3://storage-promises/{uuid.uuid4().hex}", {"endpoint_url": bucket})
        assert not loc.renames
        return loc
