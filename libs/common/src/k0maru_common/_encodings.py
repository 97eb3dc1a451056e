"""How a vault file's bytes become text: UTF-8, UTF-16/32 behind a byte order mark, UTF-8 with a
few damaged bytes, or a legacy Windows encoding guessed from the characters it gives.

Notepad on Chinese Windows saved "ANSI" (GBK) until 2019, and old notes carried into a vault
from such tools, or from Japanese, Korean, Taiwanese, Western, Central European, Russian,
Turkish, Baltic or Greek Windows, are not UTF-8. They were not indexed at all ("invalid UTF-8
at byte 0"). Each candidate encoding is tried strictly, and the text it gives is scored by the
share of its non-ASCII characters that are the common ones of that encoding's language: the
6,763 hanzi of GB2312 for GBK, Big5's 5,401 frequent hanzi, kana and JIS level-1 kanji for
Shift-JIS and EUC-JP, Hangul for EUC-KR; for the Latin encodings, the accented letters of their
languages inside words of ASCII letters; for Cyrillic and Greek, whole words of their letters.
Past ten characters, Chinese is asked for its most frequent hanzi, Japanese for kana, Korean
for Hangul, Cyrillic and Greek for their frequent letters in lowercase. Text read in the wrong
one of these gives mostly rare characters (a GBK hanzi's bytes read as Big5 land in its rare
half, as Shift-JIS in half-width katakana; Windows-1251 read as KOI8-R is capitals), so the
right encoding stands out; the Latin encodings, which all read each other's letters as letters,
are told apart by how well one language's letters cover the reading. When none reaches
`LEGACY_SCORE` the file stays unreadable: Vietnamese, the Mac encodings, ISO 8859-5 among others.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

# Byte order marks that name an encoding other than UTF-8, longest first (UTF-32 LE's begins
# with UTF-16 LE's).
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)

# UTF-8 with damage (a character cut at the end, a Windows-1252 quote pasted in) holds at least
# as many valid characters beyond ASCII as bytes that are not UTF-8. Text in a legacy encoding
# holds fewer: pairs of its bytes are valid UTF-8 only by chance (GBK: a quarter of its bad
# bytes' count at the median of zh_cmrc2018's 1,104 passages, 0.44 at most; Big5 0.39).
DAMAGED_GOOD_PER_BAD = 1.0
# The share of a candidate's non-ASCII characters that must be common ones.
LEGACY_SCORE = 0.9
# Characters scored per candidate, from the start: enough to tell, and a 2 MB note costs no more
# than a short one.
SAMPLE_CHARS = 16384

_UNDECODABLE = re.compile("[\udc80-\udcff]")
# CJK punctuation, full-width forms, the general punctuation (“ ” … —) and the shapes (◎ ○ ■ ★)
# every CJK encoding has
_SHARED_CJK = re.compile("[\u2010-\u206f\u25a0-\u25ff\u2605\u2606\u3000-\u303f\uff01-\uff5e\u00b7]")
# Narrower than `_scripts`' letters on purpose: no half-width katakana (GBK read as Shift-JIS
# gives runs of them), no conjoining jamo, no compatibility ideographs (EUC-KR's bytes read as
# them: counting those read 1 more of 1,960 short GBK snippets as EUC-KR; bench/encoding_guess.py)
_KANA = re.compile("[\u3041-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7a3\u3131-\u318e]")
# punctuation, currency and signs of Western text (`£5`, `§ 3`, `20 °C`, `½`): not those that
# are letters in the Central European encodings (ISO 8859-2's `ł` is Windows-1252's `³`), which
# would read Polish or Czech as Western text with its letters wrong
_LATIN_MARKS = re.compile(
    "[\u00a0\u00a1\u00a2-\u00a4\u00a7\u00a9\u00ab\u00ae\u00b0\u00b7\u00bb\u00bd\u00bf\u00d7\u00f7"
    "\u2013\u2014\u2018\u2019\u201a\u201c\u201d\u201e\u2022\u2026\u2039\u203a\u20ac\u2122]"
)
_NON_ASCII_TEXT = re.compile("[^\x00-\x7f]")
_NON_ASCII_RUN = re.compile("[^\x00-\x7f]{3,}")


def decode_text(data: bytes, errors: str = "strict") -> str:
    """A vault file's text (`read_text`). With `errors="strict"`, UnicodeDecodeError when it is
    none of what `read_text` reads; otherwise UTF-8 with that handler."""
    return read_text(data, errors)[0]


def read_text(data: bytes, errors: str = "strict") -> tuple[str, str]:
    """A vault file's text, and "" or how it was read when that is not plain UTF-8 (a problem to
    show on the note):
    - UTF-8, its byte order mark dropped; UTF-16 or UTF-32 when the file begins with that
      encoding's mark (Windows PowerShell 5's `>` and `Out-File`, Notepad's "Unicode");
    - one of `GUESSED_ENCODINGS` when it reads the file as the common characters of its
      language (`guess_legacy`); never a file with NUL bytes;
    - else UTF-8 with at least `DAMAGED_GOOD_PER_BAD` valid characters beyond ASCII per byte
      that is not UTF-8, those bytes read as U+FFFD.
    Otherwise UnicodeDecodeError (`errors="strict"`) at the first byte that is not UTF-8."""
    if data[:1] in (b"\xff", b"\xfe", b"\x00"):
        for bom, codec in _WIDE_BOMS:
            if data.startswith(bom):
                return data.decode(codec, errors), ""
    try:
        return data.decode("utf-8").removeprefix("\ufeff"), ""
    except UnicodeDecodeError as exc:
        first = exc
    if b"\x00" not in data:
        guessed = guess_legacy(data)
        if guessed is not None:
            text, name = guessed
            return text, f"not UTF-8: read as {name}, a guess from its characters (save it as UTF-8 to be sure)"
        escaped = data.decode("utf-8", "surrogateescape")
        bad = len(_UNDECODABLE.findall(escaped))
        if len(_NON_ASCII_TEXT.findall(escaped)) - bad >= DAMAGED_GOOD_PER_BAD * bad:
            plural = "byte that is" if bad == 1 else "bytes that are"
            text = data.decode("utf-8", "replace").removeprefix("\ufeff")
            return text, f"{bad} {plural} not UTF-8 read as U+FFFD (the first at byte {first.start})"
    if errors == "strict":
        raise first
    return data.decode("utf-8", errors).removeprefix("\ufeff"), ""


# The 300 most frequent hanzi of jieba's dictionary (a general Chinese corpus), and their
# Traditional forms. In Chinese text of either script they are about half of the hanzi; in
# Korean or Big5 bytes read as GBK (or GBK as Big5) a few in a hundred.
_FREQUENT_HANZI = frozenset(
    "一是人了不在有大中国和为这上他个地年来我会以到时要出的生学说道民家子也成行下们于后就发自之对得主长可过天作分方用多你着部能市等业全里工公经本都而高政法面门动日进区事代那去心小同北定开产前其军还然起种所如现理机体表力好外与文当两实重新三么只山水关明从化平建又制南内西没此将员名手最东头者月间无安看见各城十相但已些正口通想度加第她合院物性战由位常点海意场武使次二向治因立数样身情入原问把路被并利石老教万知级量任江及应省资委务元美特期世湖回系比气汉总展电科金先声提品设或义王社很统处四首共马形己儿司太目基领队直计别女权话少流命至报米给打变果书清活几州华解议更称程今决张导术府才保交放管结师便走达族反再题色五國爲這個來會時學說們於後發對長過業裏經門動進區開產軍還種現機體與當兩實麼關從內沒將員東頭間無見戰點場數樣問並萬級應資務氣漢總電聲設義統處馬兒領隊計別權話報給變書幾華議稱決張導術結師達題"
)
# A sample with at least this many hanzi is also asked to hold `FREQUENT_SHARE` frequent ones.
FREQUENT_AFTER = 10
FREQUENT_SHARE = 0.15
KANA_SHARE = 0.1  # of a Japanese sample's kana and kanji (Japanese prose: about half)
HANGUL_SHARE = 0.8  # of a Korean sample's Hangul and hanja
_HAN = re.compile("[\u4e00-\u9fff]")
_HAN_RUN = re.compile("[\u4e00-\u9fff]+")
# C0 controls other than tab, line and page breaks and escape: random bytes hold one in ten
_CONTROLS = re.compile("[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def _common_hanzi(sample: str, common: frozenset[str]) -> int:
    han = _HAN.findall(sample)
    if len(han) >= FREQUENT_AFTER and sum(1 for c in han if c in _FREQUENT_HANZI) < FREQUENT_SHARE * len(han):
        return 0
    return sum(1 for c in sample if c in common) + len(_SHARED_CJK.findall(sample))


def _common_gbk(sample: str) -> int:
    # kana too: GB2312 has them, and Chinese text quotes Japanese titles
    return _common_hanzi(sample, _gbk_common()) + len(_KANA.findall(sample)) - _rare_alone(sample)


def _rare_alone(sample: str) -> int:
    """The hanzi of runs made only of GB2312's level-2 (rarer) hanzi: Latin text read as GBK gives
    them (its lowercase accented letters are bytes 0xE0–0xFF, level 2's rows; Dutch `één` is
    `殚n`), while Chinese writes a rare hanzi beside common ones (`张琪`)."""
    level1 = _gb2312_level1()
    big5 = _big5_frequent()
    return sum(len(run) for run in _HAN_RUN.findall(sample) if not any(c in level1 or c in big5 for c in run))


def _common_big5(sample: str) -> int:
    return _common_hanzi(sample, _big5_frequent())


def _common_japanese(sample: str) -> int:
    """Kana, level-1 kanji and CJK punctuation; none at all when a sample of `FREQUENT_AFTER`
    or more such characters holds less than `KANA_SHARE` kana: Japanese writes its particles and
    endings in kana, while Korean or Chinese bytes read as Japanese give kanji alone."""
    common = _jis_level1()
    kana = len(_KANA.findall(sample))
    kanji = sum(1 for c in sample if c in common)
    if kana + kanji >= FREQUENT_AFTER and kana < KANA_SHARE * (kana + kanji):
        return 0
    return kanji + kana + len(_SHARED_CJK.findall(sample))


def _common_euc_kr(sample: str) -> int:
    """Hangul, and the hanja Korean writes a word in now and then (`우아(優雅)한`): none at all
    when a sample of `FREQUENT_AFTER` or more holds less than `HANGUL_SHARE` Hangul (Chinese
    bytes read as EUC-KR give Hangul and hanja about half and half), nor when it holds hanja
    and no Hangul (Latin text's accented letters are hanja's bytes: Dutch `één` is `釪n`)."""
    hangul, hanja = len(_HANGUL.findall(sample)), len(_HAN.findall(sample))
    if (hangul + hanja >= FREQUENT_AFTER and hangul < HANGUL_SHARE * (hangul + hanja)) or (hanja and not hangul):
        return 0
    return hangul + hanja + len(_SHARED_CJK.findall(sample))


# The letters beyond ASCII of the languages each Latin encoding was Windows' "ANSI" for. A text
# read in the wrong one of them still gives letters (Czech's `ř`, byte 0xF8, is Windows-1252's
# `ø`), so each reading is also asked how well one language's letters cover it (`_Scored.fit`).
_LATIN_LANGUAGES = {
    "cp1252": (
        "àâæçéèêëîïôœùûüÿ",  # French
        "äöüß",  # German
        "áéíñóúü",  # Spanish
        "áâãàçéêíóôõú",  # Portuguese
        "àèéìíîòóù",  # Italian
        "àçèéíïòóúü",  # Catalan
        "áéëïóöüèà",  # Dutch
        "æøåé",  # Danish, Norwegian
        "åäöéšž",  # Swedish, Finnish
        "áðéíóúýþæö",  # Icelandic
        "çë",  # Albanian
    ),
    "cp1250": (
        "áčďéěíňóřšťúůýž",  # Czech
        "áäčďéíĺľňóôŕšťúýž",  # Slovak
        "ąćęłńóśźż",  # Polish
        "áéíóöőúüű",  # Hungarian
        "čćđšž",  # Croatian, Bosnian, Serbian in Latin letters, Slovene
        "ăâîşţ",  # Romanian
        "äöüß",  # German, which Central European text quotes
    ),
    "cp1254": ("çğıöşüâîû",),  # Turkish
    "cp1257": (
        "ąčęėįšųūž",  # Lithuanian
        "āčēģīķļņšūž",  # Latvian
        "äõöüšž",  # Estonian
    ),
}
_LATIN_LANGUAGES["iso8859_2"] = _LATIN_LANGUAGES["cp1250"]  # Central European as Unix tools saved it


def _both_cases(letters: str) -> frozenset[str]:
    upper = {u for u in letters.upper() if not u.isascii()}
    return frozenset(letters) | upper | ({"İ"} if "ı" in letters else set())


@dataclass(frozen=True)
class _Scored:
    """Of a sample's non-ASCII characters: how many read as common ones (`common`), and how many
    of those one language's letters cover (`fit`; the same for the scripts of one language)."""

    common: int
    fit: int


def _latin(codec: str) -> Callable[[str], _Scored]:
    alphabets = tuple(_both_cases(letters) for letters in _LATIN_LANGUAGES[codec])
    known = frozenset().union(*alphabets)

    def common(sample: str) -> _Scored:
        # Accented letters sit inside words of ASCII letters; CJK or Cyrillic bytes read as a
        # Latin encoding give runs of accented letters and symbols (`»áÒé`), which count for
        # nothing, unless the run is a word's letters in one case (Turkish `ışığı`, Czech `říš`).
        alone = _NON_ASCII_RUN.sub(lambda run: run[0] if _lettered(run[0], alphabets) else "", sample)
        letters = [c for c in _NON_ASCII_TEXT.findall(alone) if c.isalpha()]
        marks = len(_LATIN_MARKS.findall(alone))
        fit = max(sum(1 for c in letters if c in alphabet) for alphabet in alphabets)
        return _Scored(sum(1 for c in letters if c in known) + marks, fit + marks)

    return common


LETTER_RUN = 4  # Turkish `ışığı`, Czech `příšerně` hold 3 accented letters in a row at most


def _lettered(run: str, alphabets: tuple[frozenset[str], ...]) -> bool:
    """Whether `run` is letters of one language in one case, and marks (`é »` with a no-break
    space); Hebrew read as Windows-1252 is lowercase letters of several."""
    letters = _LATIN_MARKS.sub("", run)
    if len(letters) > LETTER_RUN:
        return False
    return not letters or (
        (letters.islower() or letters.isupper()) and any(all(c in alphabet for c in letters) for alphabet in alphabets)
    )


# The alphabets of the scripts read from single-byte encodings, whole words of them; a language
# written in them uses its frequent letters for about 60–90 % of its text and, where the script
# has cases, writes in lowercase (gettext's translations on this machine: Russian, Ukrainian,
# Belarusian, Bulgarian, Serbian and Macedonian 61–77 % and 93–97 %; Greek 88 % and 97 %; the 12
# most frequent letters of Hebrew 76 %, of Arabic 74 %, of Persian 78 %), while text of another
# script read in them gives the rare ones or capitals (Hebrew read as Windows-1251: 39 %; Russian
# read as Windows-1253: 59 %; Windows-1251 read as KOI8-R: capitals). Greek and Hebrew write
# their final forms (`ς`, `ךםןףץ`) only at a word's end, which other bytes read as them do not.
@dataclass(frozen=True)
class _Script:
    letters: str  # lowercase, when the script has cases
    frequent: str
    share: float  # of a sample's letters, past `FREQUENT_AFTER`, that must be frequent ones
    finals: str = ""
    marks: str = ""  # the script's own punctuation, counted as common
    cased: bool = True


_CYRILLIC = _Script("абвгдеёжзийклмнопрстуфхцчшщъыьэюяєіїґўђјљњћџѓќѕ", "оеаинтсрвлкі", 0.5)
_GREEK = _Script("αβγδεζηθικλμνξοπρστυφχψωάέήίόύώϊϋΐΰς", "αοιετσνηυρπκμλάέίόςή", 0.75, finals="ς")
_HEBREW = _Script(
    "אבגדהוזחטיךכלםמןנסעףפץצקרשת",
    "יוהתלמראנבשק",
    0.5,
    finals="ךםןףץ",
    marks="\u05be\u05f3\u05f4\u200e\u200f",  # maqaf, geresh, gershayim, the direction marks
    cased=False,
)
_ARABIC = _Script(
    "ءآأؤإئابةتثجحخدذرزسشصضطظعغـفقكلمنهوىيپچژگکہھےںٹڈڑ",
    "اليمروتةنفدسکه",
    0.5,
    marks="\u060c\u061b\u061f\u200e\u200f",  # Arabic comma, semicolon, question mark, direction marks
    cased=False,
)
_THAI = _Script(
    "กขฃคฅฆงจฉชซฌญฎฏฐฑฒณดตถทธนบปผฝพฟภมยรฤลฦวศษสหฬอฮฯะาำเแโใไๅๆ",
    "ารอกนมเลงดตสบย",
    0.5,
    # its vowel and tone marks (a fifth of Thai text), which split the words `_WORD` finds
    marks="\u0e31\u0e34-\u0e3a\u0e47-\u0e4e",
    cased=False,
)
LOWERCASE_SHARE = 0.5
_WORD = re.compile(r"[^\W\d_]+")


def _script(script: _Script) -> Callable[[str], _Scored]:
    letters = frozenset(script.letters) | frozenset(script.letters.upper())
    frequent = frozenset(script.frequent)
    marks = re.compile(f"[{script.marks}]") if script.marks else None

    def common(sample: str) -> _Scored:
        good = lower = usual = 0
        for word in _WORD.findall(sample):
            if word.isascii() or not all(c in letters for c in word):
                continue  # a word mixing scripts, or holding a sign, is no word of this one
            if script.finals and any(c in script.finals for c in word[:-1]):
                continue  # a final form inside a word
            good += len(word)
            lower += sum(1 for c in word if c.islower())
            usual += sum(1 for c in word if c.lower() in frequent)
        signs = len(_LATIN_MARKS.findall(sample)) + (len(marks.findall(sample)) if marks else 0)
        if good <= signs or (
            good >= FREQUENT_AFTER
            and ((script.cased and lower < LOWERCASE_SHARE * good) or usual < script.share * good)
        ):
            # mostly signs is no text of it (0xFF is CP866's no-break space; 23 bytes of Big5-HKSCS
            # read as Windows-1251 are `€E€\Љs‹ЪЌШ`)
            return _Scored(0, 0)
        return _Scored(good + signs, good + signs)

    return common


# Two accented letters, or one and the ASCII letter after it, read in a CJK encoding as one
# character: inside a word (`çã` of Portuguese `ação` as GBK: `a玢o`; `ïn` of Dutch
# `geïnstalleerd`: `ge颪stalleerd`), where CJK text seldom writes one (`Python和Java`, `C語言`,
# `BCPL所設計` touch a capital or one side only; zh_cmrc2018 and Python's Japanese samples tell)
_WITHIN_WORD = re.compile("(?<=[a-z])[^\x00-\x7f](?=[a-z])")


def _counted(count: Callable[[str], int]) -> Callable[[str], _Scored]:
    """`count`, less the characters between two lowercase ASCII letters."""

    def common(sample: str) -> _Scored:
        found = max(0, count(sample) - len(_WITHIN_WORD.findall(sample)))
        return _Scored(found, found)

    return common


# (codec, the name users know it by, how many of a sample's non-ASCII characters are common), in
# the order that breaks ties
_CANDIDATES = (
    ("gb18030", "GBK", _counted(_common_gbk)),
    ("big5", "Big5", _counted(_common_big5)),
    ("cp932", "Shift-JIS", _counted(_common_japanese)),
    ("euc_jp", "EUC-JP", _counted(_common_japanese)),  # Japanese as Unix tools saved it
    ("cp949", "EUC-KR", _counted(_common_euc_kr)),
    ("cp1252", "Windows-1252", _latin("cp1252")),
    ("cp1250", "Windows-1250", _latin("cp1250")),
    ("iso8859_2", "ISO 8859-2", _latin("iso8859_2")),
    ("cp1254", "Windows-1254", _latin("cp1254")),
    ("cp1257", "Windows-1257", _latin("cp1257")),
    # Hebrew and Arabic before Cyrillic: a tie (a few words) goes to them, since Russian read as
    # Hebrew breaks the final forms' rule (`н` is `ם`) and Hebrew read as Russian breaks none
    ("cp1255", "Windows-1255", _script(_HEBREW)),
    ("cp1256", "Windows-1256", _script(_ARABIC)),
    ("cp1251", "Windows-1251", _script(_CYRILLIC)),
    ("koi8_r", "KOI8-R", _script(_CYRILLIC)),
    ("cp866", "CP866", _script(_CYRILLIC)),  # DOS
    ("cp1253", "Windows-1253", _script(_GREEK)),
    ("iso8859_7", "ISO 8859-7", _script(_GREEK)),
    ("cp874", "Windows-874", _script(_THAI)),  # Thai (TIS-620 and its Windows form)
)
_LAST_MULTIBYTE = "EUC-KR"  # the tie-breaks between CJK readings are among those up to here
GUESSED_CODECS = {name: codec for codec, name, _common in _CANDIDATES}  # the name a guess gives → its codec
*_FIRST, _LAST = GUESSED_CODECS
GUESSED_ENCODINGS = f"{', '.join(_FIRST)} or {_LAST}"  # for messages


def guess_legacy(data: bytes) -> tuple[str, str] | None:
    """The text and the encoding's name of the candidate that reads the largest share of
    `data`'s non-ASCII characters as common ones, when that share is at least `LEGACY_SCORE`;
    among those, the one whose common characters one language covers best (Czech read as
    Windows-1252 is letters too, of no one language); a tie goes to the earlier candidate, except
    that Big5 wins a tie with a GBK reading that needs Traditional hanzi (`舊筆記` in Big5 is
    common hanzi as GBK too: `侣掸癘`), EUC-JP, when it reads the text at all, wins over a GBK
    reading of which `KANA_SHARE` or more is kana (GB2312 has them at EUC-JP's bytes), and EUC-KR
    over a GBK reading that looks like Korean (`_korean_more_likely`). Scored on the first
    `SAMPLE_CHARS` characters. None when no candidate does, `data` is all ASCII, holds NUL bytes,
    or reads with more than 1 % control characters."""
    if b"\x00" in data or data.isascii():
        return None
    read: dict[str, tuple[float, float, str]] = {}  # name → (fit, score, text), in the candidates' order
    for codec, name, common in _CANDIDATES:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        head = text[:SAMPLE_CHARS]
        if len(_CONTROLS.findall(head)) > 0.01 * len(head):
            continue
        non_ascii = len(_NON_ASCII_TEXT.findall(head))
        if not non_ascii:
            continue
        scored = common(head)
        if scored.common >= LEGACY_SCORE * non_ascii:
            read[name] = (scored.fit / non_ascii, scored.common / non_ascii, text)
        if name == _LAST_MULTIBYTE and any(fit == 1.0 for fit, _score, _text in read.values()):
            break  # none after can beat it (a tie goes to the earlier): a CJK note costs no more
    if not read:
        return None
    name = max(read, key=lambda n: read[n][:2])  # the first of the best
    if name == "GBK":
        tied = {n for n in read if read[n][:2] == read["GBK"][:2]}
        head = read["GBK"][2][:SAMPLE_CHARS]
        gb2312 = _gb2312()
        if "Big5" in tied and any(c not in gb2312 for c in _HAN.findall(head)):
            name = "Big5"
        elif "EUC-JP" in read and len(_KANA.findall(head)) >= KANA_SHARE * len(_NON_ASCII_TEXT.findall(head)):
            name = "EUC-JP"  # GB2312 holds the kana at EUC-JP's bytes: text in kana is Japanese
        elif "EUC-KR" in read and _korean_more_likely(head, read["EUC-KR"][2][:SAMPLE_CHARS]):
            name = "EUC-KR"
    return read[name][2], name


# Hangul's bytes are GB2312's level-1 hanzi, and a Korean note too short for the frequent-hanzi
# test (`FREQUENT_AFTER`) reads as common hanzi in GBK. Two signs tell it: Korean puts a space
# between its words (a few syllables each), Chinese none between its hanzi; and a few words of
# Chinese hold one of its most frequent hanzi (`的`, `是`, `了`: half of its text), while Hangul
# read as hanzi seldom does.
_HAN_SPACE_HAN = re.compile("[\u4e00-\u9fff] [\u4e00-\u9fff]")
SPACED_SHARE = 0.5


def _korean_more_likely(as_gbk: str, as_korean: str) -> bool:
    """Whether a text that GBK and EUC-KR both read is Korean: at least `SPACED_SHARE` of its
    GBK reading's runs of hanzi end in a space and another hanzi, or that reading holds two or
    more hanzi and no frequent one while the EUC-KR reading is `HANGUL_SHARE` Hangul."""
    runs = len(_HAN_RUN.findall(as_gbk))
    if runs and len(_HAN_SPACE_HAN.findall(as_gbk)) >= SPACED_SHARE * runs:
        return True
    han = _HAN.findall(as_gbk)
    hangul, hanja = len(_HANGUL.findall(as_korean)), len(_HAN.findall(as_korean))
    return len(han) >= 2 and not any(c in _FREQUENT_HANZI for c in han) and hangul >= HANGUL_SHARE * (hangul + hanja)


def _decoded_pairs(codec: str, leads: range, trails: range) -> frozenset[str]:
    chars = set()
    for lead in leads:
        for trail in trails:
            try:
                chars.add(bytes((lead, trail)).decode(codec))
            except UnicodeDecodeError:
                continue
    return frozenset(c for c in chars if len(c) == 1 and c.isprintable())


@functools.cache
def _gb2312_level1() -> frozenset[str]:
    """GB2312's 3,755 level-1 hanzi (rows 0xB0–0xD7): 99.7 % of the hanzi of modern text."""
    return _decoded_pairs("gb2312", range(0xB0, 0xD8), range(0xA1, 0xFF))


@functools.cache
def _gb2312() -> frozenset[str]:
    """GB2312's 6,763 hanzi (rows 0xB0–0xF7), the Simplified characters of everyday text."""
    return _decoded_pairs("gb2312", range(0xB0, 0xF8), range(0xA1, 0xFF))


@functools.cache
def _gbk_common() -> frozenset[str]:
    """GB2312's hanzi and Big5's frequent ones: GBK holds Traditional text too."""
    return _gb2312() | _big5_frequent()


@functools.cache
def _big5_frequent() -> frozenset[str]:
    """Big5's 5,401 frequent hanzi (0xA440–0xC67E)."""
    return _decoded_pairs("big5", range(0xA4, 0xC7), range(0x40, 0xFF)) - frozenset(
        _decoded_pairs("big5", range(0xC6, 0xC7), range(0x7F, 0xFF))
    )


@functools.cache
def _jis_level1() -> frozenset[str]:
    """JIS X 0208's 2,965 level-1 kanji (Shift-JIS 0x889F–0x9872)."""
    return _decoded_pairs("cp932", range(0x88, 0x99), range(0x40, 0xFD))
