"""Which embedding model a vault gets when nobody names one: picked from its script mix at the
first start and kept per vault (in the data dir), so Chinese, Korean, Japanese or Russian notes get
semantic search with no flag and an English vault keeps the stronger English model.

The default model (all-MiniLM-L6-v2) reads Latin letters only (244 Han characters in its
vocabulary; Hangul, kana, Cyrillic become noise); the multilingual preset reads Han, Hangul,
kana, Cyrillic, Arabic and Thai too but is weaker on English (bench/README.md, issue 10). A vault
whose notes are at least `OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL` written in scripts the default
cannot read (a note is, when at least `NOTE_OTHER_SHARE` of its letters are) gets the
multilingual preset. Notes are counted, not letters: a Han character is a syllable where an
English word is five letters, and Chinese technical notes are half Latin identifiers, so five
long English pages outweighed 72 Chinese notes and the vault got a model that reads no Han
(before that, Han alone was counted: a Korean vault got the English model). The choice is
written once and reused, so adding a few Chinese notes later
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

from k0maru_common import MODEL_CHOICES, decode_text, letters_by_script, unreadable_share, vault_notes

DEFAULT_MODEL = "minilm-l6-int8"
MULTILINGUAL_MODEL = "use-multilingual"
ENGLISH_READS = ("latin",)  # the scripts the default model reads
OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL = 0.15  # of the notes read
# of a note's letters: a Chinese note that names `JedisConnectionException` and `maxTotal` is a
# quarter Han letters, and its meaning is all in them
NOTE_OTHER_SHARE = 0.15
CHOICE_FILE = "embedding-model.json"
SAMPLE_FILES = 2000  # at most this many notes are read, spread evenly over the vault's paths
SAMPLE_BYTES = 8192  # from the start of each


@dataclass(frozen=True)
class ModelChoice:
    model: str
    reason: str


@dataclass(frozen=True)
class ScriptMix:
    letters: dict[str, int]  # per script, over the notes read
    read: int  # notes read
    other: int  # of them, those the English model cannot read (mostly in other scripts)


def script_mix(vault: Path) -> ScriptMix:
    """The scripts of an even sample of the vault's notes."""
    # the notes the scanner would walk: a project's packages (node_modules, a virtual
    # environment) would speak English for notes written in Chinese, and take seconds to walk
    paths = vault_notes(vault, (".md", ".markdown"))
    step = max(1, len(paths) // SAMPLE_FILES)
    letters: Counter[str] = Counter()
    read = other = 0
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
        text = decode_text(data, "ignore")
        letters.update(letters_by_script(text))
        read += 1
        other += unreadable_share(text, ENGLISH_READS) >= NOTE_OTHER_SHARE
    return ScriptMix(dict(letters), read, other)


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
        mix = script_mix(vault)
        scripts = {script: n for script, n in mix.letters.items() if script not in ENGLISH_READS and n}
        share = mix.other / mix.read if mix.read else 0.0
        model = MULTILINGUAL_MODEL if share >= OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL else DEFAULT_MODEL
        named = ", ".join(sorted(scripts, key=lambda s: -scripts[s])) or "none"
        choice = ModelChoice(
            model,
            f"{mix.other} of {mix.read} notes ({share:.0%}) are mostly in scripts the English model cannot read "
            f"({named}; {'≥' if model == MULTILINGUAL_MODEL else '<'} {OTHER_SCRIPTS_SHARE_FOR_MULTILINGUAL:.0%}); "
            f"kept in {record}",
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"model": choice.model, "reason": choice.reason, "chosen_at": time.time()}) + "\n")
    tmp.replace(record)
    return choice
