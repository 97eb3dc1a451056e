"""The embedding model a vault gets with no flag: from its script mix at the first start, then kept."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

from k0maru_cli._model_choice import (
    _HAN,
    CHOICE_FILE,
    DEFAULT_MODEL,
    MULTILINGUAL_MODEL,
    _letters,
    choose_model,
    script_mix,
)
from tests.conftest import write_notes

ENGLISH = "The retriever fuses BM25 and vector rankings; the scanner hashes every note with xxh3.\n"
CHINESE = "检索服务把关键词排名和向量排名融合起来，扫描器用哈希判断笔记是否改变。\n"


def test_an_english_vault_keeps_the_english_model(tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "v", {f"n{i}.md": ENGLISH for i in range(20)})
    choice = choose_model(vault, tmp_path / "data")
    assert choice.model == DEFAULT_MODEL
    assert "0%" in choice.reason


def test_a_chinese_vault_gets_the_multilingual_model_with_no_flag(tmp_path: Path) -> None:
    notes = {f"笔记/{i}.md": CHINESE for i in range(10)} | {f"en/{i}.md": ENGLISH for i in range(10)}
    vault = write_notes(tmp_path / "v", notes)
    han, latin, read = script_mix(vault)
    assert read == 20 and han > 0 and latin > 0
    assert choose_model(vault, tmp_path / "data").model == MULTILINGUAL_MODEL


def test_the_first_choice_is_kept_when_the_vault_changes(tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "v", {f"n{i}.md": ENGLISH for i in range(5)})
    data = tmp_path / "data"
    assert choose_model(vault, data).model == DEFAULT_MODEL
    write_notes(vault, {f"zh{i}.md": CHINESE * 20 for i in range(50)})  # now mostly Chinese
    kept = choose_model(vault, data)
    assert kept.model == DEFAULT_MODEL and "kept" in kept.reason
    assert json.loads((data / CHOICE_FILE).read_text())["model"] == DEFAULT_MODEL


def test_an_explicit_model_overrides_and_is_kept(tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "v", {"a.md": ENGLISH})
    data = tmp_path / "data"
    choose_model(vault, data)
    assert choose_model(vault, data, MULTILINGUAL_MODEL).model == MULTILINGUAL_MODEL
    assert choose_model(vault, data).model == MULTILINGUAL_MODEL


def test_hidden_folders_unreadable_files_and_a_broken_record_are_not_fatal(tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "v", {".obsidian/x.md": CHINESE * 100, "a.md": ENGLISH})
    os.mkfifo(vault / "pipe.md")  # not a note to read: must not block
    (vault / "bad.md").write_bytes(b"\xff\xfe" + CHINESE.encode("utf-8")[:7])
    data = tmp_path / "data"
    data.mkdir()
    (data / CHOICE_FILE).write_text("{not json")
    assert choose_model(vault, data).model == DEFAULT_MODEL
    empty = tmp_path / "empty"
    empty.mkdir()
    assert choose_model(empty, tmp_path / "data2").model == DEFAULT_MODEL


def test_letters_are_counted_as_the_regexes_count_them_in_any_bytes() -> None:
    """The fast count (ASCII letters on the bytes) against the plain regexes over the decoded
    text: English, Chinese, accented Latin, invalid UTF-8 and sequences cut at the end."""
    latin = re.compile(r"[A-Za-z\u00c0-\u024f]")  # what counted as a Latin letter before
    rng = random.Random(3)
    pieces = [b"ab", b"Z", b" 1_", "é".encode(), "ɏ".encode(), "中".encode(), "×".encode(), b"\xff", b"\xc3", b"\x80"]
    samples = [(ENGLISH + CHINESE).encode(), ENGLISH.encode()[:-3] + "中".encode()[:2], b"", os.urandom(4096)]
    samples += [b"".join(rng.choice(pieces) for _ in range(rng.randrange(200))) for _ in range(300)]
    for data in samples:
        text = data.decode("utf-8", "ignore")
        assert _letters(data) == (len(_HAN.findall(text)), len(latin.findall(text))), data
