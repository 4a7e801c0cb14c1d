"""Files written whole or not at all (hnclip_core.files)."""

import pytest

from hnclip_core.files import write_atomically


def test_a_write_replaces_the_file_whole_and_a_failed_one_leaves_the_old_file(tmp_path):
    path = tmp_path / "new" / "folder" / "result.json"
    assert write_atomically(path, lambda tmp: tmp.write_text("first")) == path
    assert path.read_text() == "first"

    def fails_halfway(tmp):
        tmp.write_text("par")
        raise RuntimeError("killed while writing")

    with pytest.raises(RuntimeError, match="killed"):
        write_atomically(path, fails_halfway)
    assert path.read_text() == "first"
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]  # no temporary file left behind
