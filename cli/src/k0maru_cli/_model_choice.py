"""Which embedding model a vault gets when nobody names one: picked from its script mix at the
first start and kept per vault (in the data dir), so Chinese, Korean, Japanese or Russian notes get
semantic search with no flag and an English vault keeps the stronger English model.

The default model (all-MiniLM-L6-v2) reads Latin letters only (244 Han characters in its
vocabulary; Hangul, kana, Cyrillic become noise); the multilingual preset reads Han, Hangul,
kana, Cyrillic, Arabic and Thai too but is weaker on English (bench/README.md, issue 10). A vault
whose letters are at least `OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL` in scripts the default cannot
read gets the multilingual preset (it counted Han only: a Korean vault got the English model). The choice is written once and reused, so adding a few Chinese notes later
never silently re-embeds the vault with another model; `--model` (or `K0_MODEL`) overrides it,
and that choice is kept too.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from k0maru_common import MODEL_CHOICES, decode_text, letters_by_script, vault_notes

DEFAULT_MODEL = "minilm-l6-int8"
MULTILINGUAL_MODEL = "use-multilingual"
OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL = 0.15
CHOICE_FILE = "embedding-model.json"
SAMPLE_FILES = 2000  # at most this many notes are read, spread evenly over the vault's paths
SAMPLE_BYTES = 8192  # from the start of each


@dataclass(frozen=True)
class ModelChoice:
    model: str
    reason: str


def script_mix(vault: Path) -> tuple[dict[str, int], int]:
    """(letters per script, notes read) over an even sample of the vault's notes."""
    # the notes the scanner would walk: a project's packages (node_modules, a virtual
    # environment) would speak English for notes written in Chinese, and take seconds to walk
    paths = vault_notes(vault, (".md", ".markdown"))
    step = max(1, len(paths) // SAMPLE_FILES)
    letters: Counter[str] = Counter()
    read = 0
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
        letters.update(letters_by_script(decode_text(data, "ignore")))
        read += 1
    return dict(letters), read


def choose_model(vault: Path, data_dir: Path, requested: str = "") -> ModelChoice:
    """The model for this vault: `requested` if given, else the kept choice, else one from the script mix."""
    record = data_dir / CHOICE_FILE
    try:
        kept = str(json.loads(record.read_text())["model"])
    except (OSError, ValueError, KeyError, TypeError):
        kept = ""  # none yet (or unreadable): choose now
    if kept not in MODEL_CHOICES:  # a mistyped `--model` an older version kept: every start failed on it
        kept = ""
    if requested:
        choice = ModelChoice(requested, "given explicitly")
        if requested == kept:
            return choice
    elif kept:
        return ModelChoice(kept, f"kept from the first start ({record})")
    else:
        letters, read = script_mix(vault)
        other = {script: n for script, n in letters.items() if script != "latin" and n}
        share = sum(other.values()) / sum(letters.values()) if sum(letters.values()) else 0.0
        model = MULTILINGUAL_MODEL if share >= OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL else DEFAULT_MODEL
        named = ", ".join(sorted(other, key=lambda s: -other[s])) or "none"
        choice = ModelChoice(
            model,
            f"{share:.0%} of the letters in {read} notes are in scripts the English model cannot read ({named}; "
            f"{'≥' if model == MULTILINGUAL_MODEL else '<'} {OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL:.0%}); kept in {record}",
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"model": choice.model, "reason": choice.reason, "chosen_at": time.time()}) + "\n")
    tmp.replace(record)
    return choice
