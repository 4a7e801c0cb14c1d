"""Files written whole or not at all (checkpoints, training state, run-cache JSON, results), and the digests that
name files and cache folders (of a config, of a file's bytes)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write`` on a temporary file, then rename it to ``path`` (creating the folder); returns ``path``.

    A killed process, or another one reading ``path`` meanwhile (``make test`` runs chapters side by side over one
    run cache), sees the old file or the new one, never part of one; the temporary file never stays behind. It has
    ``path``'s own name, in a hidden temporary folder beside it, so the bytes are those of a plain write (``torch.save``
    names its archive after the file), and the file gets the permissions a plain write would leave: the umask's, or
    those of the file it replaces.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    tmp_path = folder / path.name
    try:
        write(tmp_path)
        try:
            os.chmod(tmp_path, stat.S_IMODE(path.stat().st_mode))
        except FileNotFoundError:
            pass
        os.replace(tmp_path, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return path


def write_text_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through :func:`write_atomically`: its UTF-8 bytes, line ends as they are."""
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8", newline=""))


def config_digest(values, length: int) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``values`` as canonical JSON.

    Canonical: ``json.dumps(values, sort_keys=True)``, that is keys sorted, the default separators (``", "``,
    ``": "``) and non-ASCII characters escaped, so equal settings give the same digest on every machine (it names
    cache folders and shipped files, so this encoding must not change).
    """
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:length]


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of the bytes of the file at ``path``, in hex (read a megabyte at a time)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
