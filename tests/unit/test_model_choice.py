"""The embedding model a vault gets with no flag: from its script mix at the first start, then kept."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest

from k0maru_cli._model_choice import CHOICE_FILE, DEFAULT_MODEL, MULTILINGUAL_MODEL, choose_model, script_mix
from k0maru_common import letters_by_script, unreadable_share
from tests.conftest import write_notes

ENGLISH = "The retriever fuses BM25 and vector rankings; the scanner hashes every note with xxh3.\n"
CHINESE = "检索服务把关键词排名和向量排名融合起来，扫描器用哈希判断笔记是否改变。\n"


def test_an_english_vault_keeps_the_english_model(tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "v", {f"n{i}.md": ENGLISH for i in range(20)})
    choice = choose_model(vault, tmp_path / "data")
    assert choice.model == DEFAULT_MODEL
    assert "0 of 20 notes (0%)" in choice.reason


def test_a_chinese_vault_gets_the_multilingual_model_with_no_flag(tmp_path: Path) -> None:
    notes = {f"笔记/{i}.md": CHINESE for i in range(10)} | {f"en/{i}.md": ENGLISH for i in range(10)}
    vault = write_notes(tmp_path / "v", notes)
    mix = script_mix(vault)
    assert (mix.read, mix.other) == (20, 10) and mix.letters["han"] > 0 and mix.letters["latin"] > 0
    assert choose_model(vault, tmp_path / "data").model == MULTILINGUAL_MODEL


def test_a_projects_packages_do_not_outvote_its_chinese_notes(tmp_path: Path) -> None:
    """A JavaScript and Python project whose notes are Chinese: node_modules and the virtual
    environment hold far more English `.md` files, which the scanner never indexes."""
    notes = {f"docs/{i}.md": CHINESE for i in range(10)}
    notes |= {f"node_modules/pkg{i}/README.md": ENGLISH for i in range(200)}
    notes |= {"venv/pyvenv.cfg": "home = /usr/bin\n"} | {f"venv/lib/p{i}/README.md": ENGLISH for i in range(200)}
    vault = write_notes(tmp_path / "v", notes)
    mix = script_mix(vault)
    assert mix.read == 10 and mix.letters["latin"] == 0
    assert choose_model(vault, tmp_path / "data").model == MULTILINGUAL_MODEL


def test_a_vault_of_chinese_notes_is_not_outvoted_by_a_few_long_english_pages(tmp_path: Path) -> None:
    """72 Chinese notes (half of their letters Latin identifiers) and 5 long English pages: by
    letters, 14 % Han, and the vault got the English model, which reads no Han; by notes, 94 %."""
    chinese = "Redis 连接池超时：把 maxTotal 调大，JedisConnectionException 就不再出现。\n"
    notes = {f"技术/{i}.md": chinese for i in range(72)} | {f"en/{i}.md": ENGLISH * 60 for i in range(5)}
    vault = write_notes(tmp_path / "v", notes)
    mix = script_mix(vault)
    assert sum(n for s, n in mix.letters.items() if s != "latin") / sum(mix.letters.values()) < 0.15
    choice = choose_model(vault, tmp_path / "data")
    assert choice.model == MULTILINGUAL_MODEL and "72 of 77 notes" in choice.reason
    few = write_notes(
        tmp_path / "few", {f"en/{i}.md": ENGLISH for i in range(90)} | {f"{i}.md": chinese for i in range(10)}
    )
    assert choose_model(few, tmp_path / "few-data").model == DEFAULT_MODEL  # 10 % of the notes: English


@pytest.mark.parametrize(
    ("script", "text"),
    [
        ("hangul", "서버 배포 절차는 매주 금요일에 검토합니다. 장애가 나면 먼저 롤백합니다.\n"),
        ("kana", "テストはよくタイムアウトします。キャッシュをクリアしてからもう一度ためしてください。\n"),
        ("cyrillic", "Сервер перезапускается после обновления драйвера, потом всё работает.\n"),
    ],
)
def test_a_korean_japanese_or_russian_vault_gets_the_multilingual_model(tmp_path: Path, script: str, text: str) -> None:
    """The English model reads Latin letters only: it counted Han alone, and a Korean vault got it."""
    vault = write_notes(tmp_path / "v", {f"{i}.md": text for i in range(10)} | {"en.md": ENGLISH})
    choice = choose_model(vault, tmp_path / "data")
    assert choice.model == MULTILINGUAL_MODEL and script in choice.reason
    english_reads = ("latin",)
    assert unreadable_share(text, english_reads) > 0.9 and unreadable_share(ENGLISH, english_reads) == 0
    assert unreadable_share(text, ("latin", "han", "cyrillic", "arabic", "hangul", "kana", "thai")) == 0


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


def test_letters_are_counted_as_single_letter_regexes_count_them() -> None:
    """The counts by runs and bytes against one regex match per letter: English, Chinese, Korean,
    accented Latin, invalid UTF-8 and sequences cut at the end."""
    latin = re.compile(r"[A-Za-z\u00c0-\u024f]")
    han = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
    hangul = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
    rng = random.Random(3)
    pieces = [b"ab", b"Z", b" 1_", "é".encode(), "ɏ".encode(), "中".encode(), "한".encode(), "×".encode(), b"\xff"]
    samples = [(ENGLISH + CHINESE).encode(), ENGLISH.encode()[:-3] + "中".encode()[:2], b"", os.urandom(4096)]
    samples += [b"".join(rng.choice(pieces) for _ in range(rng.randrange(200))) for _ in range(300)]
    for data in samples:
        text = data.decode("utf-8", "ignore")
        counts = letters_by_script(text)
        assert counts["latin"] == len(latin.findall(text)), data
        assert counts.get("han", 0) == len(han.findall(text)) and counts.get("hangul", 0) == len(hangul.findall(text))


def test_a_mistyped_model_kept_by_an_older_version_is_chosen_again(tmp_path: Path) -> None:
    """`--model minilm-l6-int` was kept for the vault, and every later `k0maru up` failed on it
    after a minute of embedder retries; the command line now refuses such a name before anything
    starts (`test_cli`), and one already kept is not kept."""
    from k0maru_common import MODEL_CHOICES
    from k0maru_embedder._presets import PRESETS

    assert set(MODEL_CHOICES) == {*PRESETS, "custom", "http"}  # the command line's list is the embedder's
    vault = write_notes(tmp_path / "v", {f"n{i}.md": ENGLISH for i in range(5)})
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / CHOICE_FILE).write_text('{"model": "minilm-l6-int", "reason": "given explicitly"}\n')
    assert choose_model(vault, tmp_path / "data").model == DEFAULT_MODEL
