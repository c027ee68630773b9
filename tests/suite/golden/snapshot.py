"""A syrupy extension that keeps each case's golden file at `golden/<case id>.json`.

It reuses `harness.suite.golden.serialize` and `write_atomically`, so `pytest --snapshot-update`
writes exactly what `conform golden update` writes. A test asserts `golden_snapshot(name=case_id) ==
document`; syrupy then fails a plain run on any drift and reports (and, with `--snapshot-update`,
deletes) golden files whose recording is gone, as unused snapshots. Unused files are found when
pytest runs without path arguments (syrupy's rule for files outside the test's own folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from harness.files import write_atomically
from harness.suite.golden import serialize

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SnapshotIndex


class GoldenExtension(SingleFileSnapshotExtension):
    """Golden files of the suite at `suite_root`: one JSON file per case, named by case id."""

    suite_root: ClassVar[Path]
    #: The test that asserts golden files. syrupy relates a snapshot to a test by name, so each
    #: golden file's snapshot is named `test_golden[<case id>]`, like that test's parametrized ids.
    test_name: ClassVar[str] = "test_golden"
    file_extension = "json"
    _write_mode = WriteMode.TEXT

    @classmethod
    def for_suite(cls, suite_root: Path) -> type[GoldenExtension]:
        """This extension bound to one suite folder."""
        return type("GoldenExtension", (cls,), {"suite_root": suite_root.resolve()})

    @classmethod
    def _golden_dir(cls) -> Path:
        return cls.suite_root / "golden"

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> str:
        return serialize(data)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        if not isinstance(index, str):
            raise TypeError("name the golden snapshot by case id: golden_snapshot(name=case_id)")
        return f"{cls.test_name}[{index}]"

    @classmethod
    def get_location(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        if not isinstance(index, str):
            raise TypeError("name the golden snapshot by case id: golden_snapshot(name=case_id)")
        return str(cls._golden_dir() / f"{index}.json")

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(cls._golden_dir())

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(cls._golden_dir())

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        return filepath.endswith(".json") and Path(filepath).is_relative_to(self._golden_dir())

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        return Path(snapshot_location).is_relative_to(cls._golden_dir())

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        case_id = Path(snapshot_location).relative_to(self._golden_dir()).with_suffix("")
        collection = SnapshotCollection(location=snapshot_location)
        collection.add(Snapshot(name=f"{self.test_name}[{case_id.as_posix()}]"))
        return collection

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: Any = None
    ) -> None:
        snapshot = next(iter(snapshot_collection))
        write_atomically(Path(snapshot_collection.location), str(snapshot.data))
