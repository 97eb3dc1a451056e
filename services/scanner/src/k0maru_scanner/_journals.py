"""Logseq's journal pages: which file is the journal of which day, and the title Logseq shows.

Logseq names a journal's file by `:journal/file-name-format` (default `yyyy_MM_dd`, in
`:journals-directory`, default `journals`) and shows it titled by `:journal/page-title-format`
(default `MMM do, yyyy`: "Dec 4th, 2026"); `[[Dec 4th, 2026]]` links to it. Both are set in
`logseq/config.edn` (read by `_tool_settings.py`). The formats are date-fns patterns; the tokens
Logseq's own list of formats uses are read: yyyy, yy, MMMM, MMM, MM, M, do, dd, d, EEEE, EEE, E,
and 'quoted' text. A file-name format with other tokens cannot name a day: the default is kept.
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
                "d": r"(?P<d>\d{1,2})"}  # fmt: skip


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

    @cached_property
    def _file_pattern(self) -> re.Pattern[str]:
        parts, seen = [], set()
        for token in _TOKEN.findall(self.file):
            field = _FILE_FIELDS.get(token)
            if field is not None and token[0] not in seen:
                seen.add(token[0])
                parts.append(field)
            elif token[0].isalpha() and not token.startswith("'"):
                return JournalFormat()._file_pattern  # a token that names no day's number: Logseq's default
            else:
                parts.append(re.escape(token[1:-1] if len(token) > 1 else token))
        if seen != {"y", "M", "d"}:
            return JournalFormat()._file_pattern
        return re.compile(rf"(?:^|/){re.escape(self.folder)}/{''.join(parts)}\.md$")

    def names(self, path: str) -> list[str]:
        """The journal's title and its ISO day when `path` is a journal's file; [] otherwise."""
        if self.folder + "/" not in path:  # most notes: no regex
            return []
        match = self._file_pattern.search(path)
        if not match:
            return []
        try:
            day = date(int(match.group("y")), int(match.group("m")), int(match.group("d")))
        except ValueError:
            return []
        return [format_day(day, self.title), day.isoformat()]

    @property
    def fingerprint(self) -> str:
        """ "" for Logseq's defaults; else what distinguishes the notes parsed with these formats."""
        return "" if self == JournalFormat() else f"journals {self.folder}/{self.file} titled {self.title}"
