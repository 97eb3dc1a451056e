"""Notes named by their day: Logseq's journal pages (which file is the journal of which day, and
the title Logseq shows) and Obsidian's daily notes in the format its settings give.

Logseq names a journal's file by `:journal/file-name-format` (default `yyyy_MM_dd`, in
`:journals-directory`, default `journals`) and shows it titled by `:journal/page-title-format`
(default `MMM do, yyyy`: "Dec 4th, 2026"); `[[Dec 4th, 2026]]` links to it. Both are set in
`logseq/config.edn` (read by `_tool_settings.py`). The formats are date-fns patterns; the tokens
Logseq's own list of formats uses are read: yyyy, yy, MMMM, MMM, MM, M, do, dd, d, EEEE, EEE, E,
and 'quoted' text. A file-name format with other tokens cannot name a day: the default is kept.

Obsidian's daily notes (core plugin, `.obsidian/daily-notes.json`, or the Periodic Notes plugin's
daily notes when enabled: `folder`, and `format` in
moment.js tokens, `DD.MM.YYYY`, `MMMM D, YYYY`, `YYYY/MM/YYYY-MM-DD`; read by `_tool_settings.py`
and written here as date-fns, `moment_to_date_fns`) give their notes' days (`daily_day`) when
they are named otherwise than `YYYY-MM-DD` (which `_markdown.name_day` reads in any folder).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import cached_property

DEFAULT_TITLE = "MMM do, yyyy"
DEFAULT_FILE = "yyyy_MM_dd"
DEFAULT_FOLDER = "journals"
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_TOKEN = re.compile(r"yyyy|yy|MMMM|MMM|MM|M|do|dd|d|EEEE|EEE|E|'[^']*'|.", re.DOTALL)
_FILE_FIELDS = {"yyyy": r"(?P<y>\d{4})", "MM": r"(?P<m>\d{2})", "M": r"(?P<m>\d{1,2})", "dd": r"(?P<d>\d{2})",
                "d": r"(?P<d>\d{1,2})", "do": r"(?P<d>\d{1,2})(?:st|nd|rd|th)",
                "MMMM": rf"(?P<mn>{'|'.join(_MONTHS)})", "MMM": rf"(?P<mn>{'|'.join(m[:3] for m in _MONTHS)})"}  # fmt: skip
# tokens that name no field of the day: matched, not read
_FILE_WORDS = {"EEEE": f"(?:{'|'.join(_WEEKDAYS)})", "EEE": f"(?:{'|'.join(d[:3] for d in _WEEKDAYS)})",
               "E": f"(?:{'|'.join(d[:3] for d in _WEEKDAYS)})", "yy": r"\d{2}"}  # fmt: skip
_MOMENT = re.compile(r"\[[^\]]*\]|YYYY|YY|MMMM|MMM|MM|Mo|M|Do|DD|D|dddd|ddd|dd|d|.", re.DOTALL)
_MOMENT_TO_DATE_FNS = {"YYYY": "yyyy", "YY": "yy", "MMMM": "MMMM", "MMM": "MMM", "MM": "MM", "M": "M", "Do": "do",
                       "DD": "dd", "D": "d", "dddd": "EEEE", "ddd": "EEE"}  # fmt: skip


def moment_to_date_fns(pattern: str) -> str:
    """A moment.js format (Obsidian's) in date-fns tokens; "" when it uses one with no
    counterpart here (`Mo`, `dd`, `d`, `Q`, `w`, …: such a daily note's day is not read)."""
    out = []
    for token in _MOMENT.findall(pattern):
        if token.startswith("["):
            out.append("'" + token[1:-1].replace("'", "") + "'")
        elif token in _MOMENT_TO_DATE_FNS:
            out.append(_MOMENT_TO_DATE_FNS[token])
        elif token.isalpha():
            return ""
        else:
            out.append(token if token != "'" else "")
    return "".join(out)


def _file_regex(file: str, folder: str) -> re.Pattern[str] | None:
    """What a note named by `file` (date-fns) in `folder` ("" the vault's root) looks like, with
    the day's fields as groups; None when the format cannot name a day."""
    parts, seen = [], set()
    for token in _TOKEN.findall(file):
        field = _FILE_FIELDS.get(token)
        kind = "m" if token.startswith("M") else token[0]
        if field is not None:
            # a field again (`YYYY/MM/YYYY-MM-DD`): matched, read once
            parts.append(field if kind not in seen else re.sub(r"\(\?P<\w+>", "(?:", field))
            seen.add(kind)
        elif token in _FILE_WORDS:
            parts.append(_FILE_WORDS[token])
        elif token[0].isalpha() and not token.startswith("'"):
            return None
        else:
            parts.append(re.escape(token[1:-1] if len(token) > 1 else token))
    if seen != {"y", "m", "d"}:
        return None
    where = rf"(?:^|/){re.escape(folder)}/" if folder else "^"
    return re.compile(rf"{where}{''.join(parts)}\.md$")


def _day_of(match: re.Match[str]) -> date | None:
    month = match["m"] if "m" in match.groupdict() and match["m"] else None
    if month is None:
        name = match["mn"]
        month = next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name))
    try:
        return date(int(match["y"]), int(month), int(match["d"]))
    except ValueError:
        return None


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 11 <= n % 100 <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def format_day(day: date, pattern: str) -> str:
    """`day` written as the date-fns `pattern` says (the tokens above; other letters as they are)."""
    out = []
    for token in _TOKEN.findall(pattern):
        out.append(
            {
                "yyyy": f"{day.year:04d}",
                "yy": f"{day.year % 100:02d}",
                "MMMM": _MONTHS[day.month - 1],
                "MMM": _MONTHS[day.month - 1][:3],
                "MM": f"{day.month:02d}",
                "M": str(day.month),
                "do": _ordinal(day.day),
                "dd": f"{day.day:02d}",
                "d": str(day.day),
                "EEEE": _WEEKDAYS[day.weekday()],
                "EEE": _WEEKDAYS[day.weekday()][:3],
                "E": _WEEKDAYS[day.weekday()][:3],
            }.get(token, token[1:-1] if len(token) > 1 and token.startswith("'") else token)
        )
    return "".join(out)


@dataclass(frozen=True)
class JournalFormat:
    title: str = DEFAULT_TITLE
    file: str = DEFAULT_FILE
    folder: str = DEFAULT_FOLDER  # vault-relative, without slashes at either end
    # Obsidian's daily notes: their name (date-fns, `moment_to_date_fns`; "" none set) and folder
    daily_file: str = ""
    daily_folder: str = ""

    @cached_property
    def _file_pattern(self) -> re.Pattern[str]:
        pattern = _file_regex(self.file, self.folder)
        # a token that names no day's number: Logseq's default
        return pattern or JournalFormat()._file_pattern

    @cached_property
    def _daily_pattern(self) -> re.Pattern[str] | None:
        return _file_regex(self.daily_file, self.daily_folder) if self.daily_file else None

    def names(self, path: str) -> list[str]:
        """The journal's title and its ISO day when `path` is a journal's file; [] otherwise."""
        if self.folder + "/" not in path:  # most notes: no regex
            return []
        match = self._file_pattern.search(path)
        day = _day_of(match) if match else None
        return [format_day(day, self.title), day.isoformat()] if day else []

    def daily_day(self, path: str) -> str:
        """The day of Obsidian's daily note at `path` (ISO); "" when it is none."""
        if self._daily_pattern is None or (self.daily_folder and self.daily_folder + "/" not in path):
            return ""
        match = self._daily_pattern.search(path)
        day = _day_of(match) if match else None
        return day.isoformat() if day else ""

    @property
    def fingerprint(self) -> str:
        """ "" for Logseq's defaults and no daily notes' format; else what distinguishes the notes
        parsed with these formats."""
        said = []
        if (self.title, self.file, self.folder) != (DEFAULT_TITLE, DEFAULT_FILE, DEFAULT_FOLDER):
            said.append(f"journals {self.folder}/{self.file} titled {self.title}")
        if self.daily_file:
            said.append(f"daily notes {self.daily_folder}/{self.daily_file}")
        return "; ".join(said)
