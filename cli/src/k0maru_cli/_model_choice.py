"""Which embedding model a vault gets when nobody names one: picked from its script mix at the
first start and kept per vault (in the data dir), so Chinese notes get semantic search with no flag
and an English vault keeps the stronger English model.

The default model (all-MiniLM-L6-v2) cannot read Han text (244 Han characters in its vocabulary);
the multilingual preset reads both scripts but is weaker on English (bench/README.md, issue 10).
A vault whose letters are at least `HAN_SHARE_FOR_MULTILINGUAL` Han characters gets the
multilingual preset. The choice is written once and reused, so adding a few Chinese notes later
never silently re-embeds the vault with another model; `--model` (or `K0_MODEL`) overrides it,
and that choice is kept too.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "minilm-l6-int8"
MULTILINGUAL_MODEL = "use-multilingual"
HAN_SHARE_FOR_MULTILINGUAL = 0.15
CHOICE_FILE = "embedding-model.json"
SAMPLE_FILES = 2000  # at most this many notes are read, spread evenly over the vault's paths
SAMPLE_BYTES = 8192  # from the start of each
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# Latin letters: A-Z, a-z (counted on the bytes) and U+00C0–U+024F (by this regex)
_LATIN_BEYOND_ASCII = re.compile(r"[\u00c0-\u024f]")
_NOT_ASCII_LETTER = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalpha())


@dataclass(frozen=True)
class ModelChoice:
    model: str
    reason: str


def _note_paths(vault: Path) -> list[str]:
    paths: list[str] = []
    for root, dirs, files in os.walk(vault, onerror=lambda _e: None):  # unreadable folders are skipped
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        paths.extend(os.path.join(root, f) for f in sorted(files) if f.lower().endswith((".md", ".markdown")))
    return paths


def script_mix(vault: Path) -> tuple[int, int, int]:
    """(Han characters, Latin letters, notes read) over an even sample of the vault's notes."""
    paths = _note_paths(vault)
    step = max(1, len(paths) // SAMPLE_FILES)
    han = latin = read = 0
    for path in paths[::step][:SAMPLE_FILES]:
        try:  # non-blocking: a FIFO named like a note must not hang the start
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:  # a vanished file, no permission, a loop: not evidence either way
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = os.read(fd, SAMPLE_BYTES)
        except OSError:
            continue
        finally:
            os.close(fd)
        note_han, note_latin = _letters(data)
        han += note_han
        latin += note_latin
        read += 1
    return han, latin, read


def _letters(data: bytes) -> tuple[int, int]:
    """(Han characters, Latin letters) in the start of a note, as the text decodes. ASCII
    letters are counted on the bytes by deleting everything else in C (UTF-8 never uses an
    ASCII byte inside another character, and decoding drops no ASCII byte); the regexes only
    look for the rarer characters. 13 M letters of a 6,571-note vault's sample took 1.9 s
    through one regex for all Latin letters, before any service could start."""
    ascii_letters = len(data.translate(None, _NOT_ASCII_LETTER))
    if data.isascii():
        return 0, ascii_letters
    text = data.decode("utf-8", "ignore")
    return len(_HAN.findall(text)), ascii_letters + len(_LATIN_BEYOND_ASCII.findall(text))


def choose_model(vault: Path, data_dir: Path, requested: str = "") -> ModelChoice:
    """The model for this vault: `requested` if given, else the kept choice, else one from the script mix."""
    record = data_dir / CHOICE_FILE
    try:
        kept = str(json.loads(record.read_text())["model"])
    except (OSError, ValueError, KeyError, TypeError):
        kept = ""  # none yet (or unreadable): choose now
    if requested:
        choice = ModelChoice(requested, "given explicitly")
        if requested == kept:
            return choice
    elif kept:
        return ModelChoice(kept, f"kept from the first start ({record})")
    else:
        han, latin, read = script_mix(vault)
        share = han / (han + latin) if han + latin else 0.0
        model = MULTILINGUAL_MODEL if share >= HAN_SHARE_FOR_MULTILINGUAL else DEFAULT_MODEL
        choice = ModelChoice(
            model,
            f"{share:.0%} of the letters in {read} notes are Han "
            f"({'≥' if model == MULTILINGUAL_MODEL else '<'} {HAN_SHARE_FOR_MULTILINGUAL:.0%}); kept in {record}",
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"model": choice.model, "reason": choice.reason, "chosen_at": time.time()}) + "\n")
    tmp.replace(record)
    return choice
