"""Files written whole or not at all (hnclip_core.files)."""

import hashlib
import os
import stat
from functools import partial

import pytest
import torch

from hnclip_core.files import config_digest, file_sha256, write_atomically, write_text_atomically


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


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_written_file_gets_the_permissions_of_a_plain_write(tmp_path):
    old_umask = os.umask(0o027)
    try:
        path = write_atomically(tmp_path / "new.json", lambda tmp: tmp.write_text("{}"))
        assert stat.S_IMODE(path.stat().st_mode) == 0o640  # 0o666 less the umask, as open() gives
        path.chmod(0o604)
        write_atomically(path, lambda tmp: tmp.write_text("[]"))
        assert stat.S_IMODE(path.stat().st_mode) == 0o604  # a replaced file keeps its permissions
    finally:
        os.umask(old_umask)


def test_write_text_atomically_writes_the_texts_utf8_bytes_as_they_are(tmp_path):
    text = '{\n  "caption": "γ = 0.5 – a café"\r\n}\n'
    path = write_text_atomically(tmp_path / "out" / "summary.json", text)
    assert path.read_bytes() == text.encode("utf-8")  # no newline translation, no BOM
    assert [p.name for p in path.parent.iterdir()] == ["summary.json"]


def test_config_digest_is_the_sha256_of_sorted_key_json_with_default_separators_and_ascii_escapes():
    values = {"b": [1, 2.5, None, True], "a": "γ", "c": {"z": 1, "y": (1, 2)}}
    canonical = '{"a": "\\u03b3", "b": [1, 2.5, null, true], "c": {"y": [1, 2], "z": 1}}'
    assert config_digest(values, 12) == hashlib.sha256(canonical.encode()).hexdigest()[:12] == "b2511adc7f1f"
    assert config_digest(values, 10) == config_digest(values, 12)[:10]
    assert config_digest({"z": 1, "a": 2}, 12) == config_digest({"a": 2, "z": 1}, 12)  # key order does not count


def test_file_sha256_is_the_sha256_of_the_files_bytes(tmp_path):
    data = bytes(range(256)) * 5000  # over one read block
    path = tmp_path / "weights.pt"
    path.write_bytes(data)
    assert file_sha256(path) == file_sha256(str(path)) == hashlib.sha256(data).hexdigest()


def test_a_checkpoint_written_atomically_has_the_bytes_of_a_plain_torch_save(tmp_path):
    state = {"weight": torch.arange(6.0).reshape(2, 3), "logit_scale": torch.tensor(4.6)}
    plain = tmp_path / "plain" / "toy.pt"
    plain.parent.mkdir()
    torch.save(state, plain)
    atomic = write_atomically(tmp_path / "toy.pt", partial(torch.save, state))
    assert atomic.read_bytes() == plain.read_bytes()  # torch.save names its archive after the file
