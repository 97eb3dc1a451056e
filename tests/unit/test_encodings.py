"""Notes that are not UTF-8: the legacy Windows encodings read by a guess from their characters,
UTF-8 with a few damaged bytes, and what stays unreadable."""

from __future__ import annotations

import random

import pytest

from k0maru_common import decode_text, guess_legacy, read_text

# What people wrote in Notepad on Chinese, Taiwanese, Japanese, Korean and Western Windows
SIMPLIFIED = (
    "# 周会记录\n\n今天讨论了数据库连接池的问题。线上环境在高峰期出现连接超时，"
    "原因是连接池的上限设得太小。决定把上限从二十调到五十，并且加上监控告警。\n\n"
    "- 负责人：小王\n- 下次检查：周五之前\n"
)
TRADITIONAL = (
    "# 週會紀錄\n\n今天討論了資料庫連線池的問題。正式環境在尖峰時段出現連線逾時，"
    "原因是連線池的上限設得太小。決定把上限從二十調到五十，並且加上監控警示。\n"
)
JAPANESE = (
    "# 障害の記録\n\n本番環境でデータベースの接続がタイムアウトしました。"
    "原因は接続プールの上限が小さすぎたことです。上限を二十から五十に変更しました。\n"
)
KOREAN = (
    "# 장애 기록\n\n◎ 운영(運營) 환경에서 데이터베이스 연결 시간이 초과되었습니다. "
    "원인은 연결 풀의 상한이 너무 작았기 때문입니다. 상한을 이십에서 오십으로 바꾸었습니다.\n"
)
FRENCH = "# Réunion\n\nLe délai de connexion à la base a été dépassé : la réserve était trop petite. Décision : « cinquante ».\n"
# and on Russian, Central European, Turkish, Baltic and Greek Windows (and Unix, and DOS)
RUSSIAN = (
    "# Отчёт о сбое\n\nВ рабочей среде истекло время подключения к базе данных. Причина: "
    "слишком маленький пул соединений. Решение: поднять предел с двадцати до пятидесяти.\n"
)
CZECH = "# Záznam o výpadku\n\nPřipojení k databázi vypršelo, protože fond spojení byl příliš malý. Řešení: zvýšit limit na padesát.\n"
POLISH = "# Notatka z awarii\n\nPołączenie z bazą danych przekroczyło limit czasu. Przyczyna: pula połączeń była zbyt mała. Zwiększyliśmy limit do pięćdziesięciu.\n"
TURKISH = "# Arıza kaydı\n\nVeritabanı bağlantısı zaman aşımına uğradı. Sebep: bağlantı havuzunun üst sınırı çok küçüktü. Sınırı elliye çıkardık.\n"
LATVIAN = "# Kļūmes pieraksts\n\nSavienojums ar datubāzi pārsniedza laika ierobežojumu. Iemesls: savienojumu kopa bija pārāk maza.\n"
GREEK = "# Αναφορά βλάβης\n\nΗ σύνδεση με τη βάση δεδομένων έληξε. Αιτία: η δεξαμενή συνδέσεων ήταν πολύ μικρή. Αυξήσαμε το όριο στα πενήντα.\n"


@pytest.mark.parametrize(
    ("text", "codec", "name"),
    [
        (SIMPLIFIED, "gbk", "GBK"),
        (TRADITIONAL, "big5", "Big5"),
        (JAPANESE, "cp932", "Shift-JIS"),
        (JAPANESE, "euc_jp", "EUC-JP"),
        (KOREAN, "cp949", "EUC-KR"),
        (FRENCH, "cp1252", "Windows-1252"),
        (RUSSIAN, "cp1251", "Windows-1251"),
        (RUSSIAN, "koi8_r", "KOI8-R"),
        (RUSSIAN, "cp866", "CP866"),
        (CZECH, "cp1250", "Windows-1250"),
        (POLISH, "iso8859_2", "ISO 8859-2"),
        (TURKISH, "cp1254", "Windows-1254"),
        (LATVIAN, "cp1257", "Windows-1257"),
        (GREEK, "cp1253", "Windows-1253"),
        # a mainland note quoting a Traditional name and a Japanese title, all in GBK
        (SIMPLIFIED + "参考：《資料庫連線》和《データベース》\n", "gb18030", "GBK"),
    ],
    ids=[
        "simplified",
        "traditional",
        "japanese",
        "japanese-unix",
        "korean",
        "french",
        "russian",
        "russian-unix",
        "russian-dos",
        "czech",
        "polish-unix",
        "turkish",
        "latvian",
        "greek",
        "mixed-scripts",
    ],
)
def test_a_note_in_a_legacy_encoding_is_read_as_written(text: str, codec: str, name: str):
    data = text.encode(codec)
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    assert read_text(data) == (
        text,
        f"not UTF-8: read as {name}, a guess from its characters (save it as UTF-8 to be sure)",
    )
    assert decode_text(data) == decode_text(data, "replace") == text


def test_korean_is_read_neither_as_gbk_nor_as_japanese():
    """EUC-KR's Hangul bytes are exactly GB2312's first-level hanzi, and EUC-JP's level-1 kanji:
    as GBK, Korean reads as valid but rare Chinese (the frequent-hanzi share gives it away), as
    EUC-JP as kanji without a kana (which Japanese cannot be written without)."""
    data = KOREAN.encode("cp949")
    assert data.decode("gb18030") and data.decode("euc_jp")  # valid as both
    assert guess_legacy(data) == (KOREAN, "EUC-KR")


def test_central_european_text_is_not_read_as_western_with_its_letters_wrong():
    """Czech in Windows-1250 is letters in Windows-1252 too (`ř` → `ø`, `č` → `è`), of no one
    language; Hungarian's `ő` is Portuguese's `õ`. Before: read as Windows-1252, letters wrong."""
    hungarian = "# Hibajegy\n\nAz adatbázis-kapcsolat túllépte az időkorlátot, mert a kapcsolatkészlet túl kicsi volt. Megnöveltük ötvenre.\n"
    for text in (CZECH, hungarian):
        data = text.encode("cp1250")
        assert data.decode("cp1252") != text
        assert guess_legacy(data) == (text, "Windows-1250")


def test_latin_text_is_not_read_as_cjk_for_letters_inside_its_words():
    """`çã` in Portuguese `ação` are one common GBK hanzi (`a玢o`), `ïn` in Dutch `geïnstalleerd`
    another: CJK text seldom writes a character between two lowercase letters. `éé` in Dutch
    `één` is a rare hanzi alone (`殚n`), or a hanja without Hangul (`釪n`)."""
    for text in ("Configuração da ação\n", "Het pakket is geïnstalleerd\n", "Geef één of meer\n"):
        assert guess_legacy(text.encode("cp1252")) == (text, "Windows-1252")


def test_a_short_korean_note_is_not_read_as_chinese():
    """Hangul's bytes are GB2312's common hanzi: a few Korean words read as valid Chinese, too
    short for the frequent-hanzi test. Korean spaces its words; Chinese has frequent hanzi."""
    for text in ("회의 기록 정리", "장애보고서", "데이터베이스 연결"):
        assert guess_legacy(text.encode("cp949")) == (text, "EUC-KR")
    for text in ("数据库连接", "今天的会议记录"):  # and Chinese stays Chinese
        assert guess_legacy(text.encode("gbk")) == (text, "GBK")


def test_hebrew_and_arabic_are_read_and_not_taken_for_russian():
    """Hebrew (Windows-1255) is lowercase Cyrillic at Windows-1251's bytes: a few words of it pass
    for Russian. Hebrew writes its final forms only at a word's end, and Russian read as Hebrew
    breaks that (`н` is `ם`), so a tie between the two goes to Hebrew."""
    hebrew = "# דוח תקלה\n\nהחיבור למסד הנתונים חרג מהזמן המוקצב. הסיבה: מאגר החיבורים היה קטן מדי. הגדלנו את המגבלה לחמישים.\n"
    arabic = (
        "# تقرير العطل\n\nانتهت مهلة الاتصال بقاعدة البيانات، لأن مجمع الاتصالات كان صغيرا جدا. رفعنا الحد إلى خمسين.\n"
    )
    assert guess_legacy(hebrew.encode("cp1255")) == (hebrew, "Windows-1255")
    assert guess_legacy(arabic.encode("cp1256")) == (arabic, "Windows-1256")
    assert guess_legacy("סיכום פגישה".encode("cp1255")) == ("סיכום פגישה", "Windows-1255")  # meeting notes
    assert guess_legacy("список дел".encode("cp1251")) == ("список дел", "Windows-1251")


def test_scripts_not_guessed_stay_unreadable():
    # Python's Big5-HKSCS sample (Hong Kong's characters beyond Big5): as Windows-1251 it was
    # `€E€\Љs‹ЪЌШ`, more signs than letters
    assert guess_legacy(b"\x88E\x88\\\x8as\x8b\xda\x8d\xd8\n\x88f\x88b\x88\xa7 \x88\xa7\x88\xa3\n") is None
    assert guess_legacy(RUSSIAN.encode("iso8859_5")) is None  # Cyrillic as old Unix tools wrote it


def test_thai_is_read_with_its_vowel_and_tone_marks():
    thai = "# รายงานข้อผิดพลาด\n\nการเชื่อมต่อฐานข้อมูลหมดเวลา เพราะพูลการเชื่อมต่อเล็กเกินไป\n"
    assert guess_legacy(thai.encode("cp874")) == (thai, "Windows-874")


def test_utf8_with_a_few_damaged_bytes_is_read_with_replacement_characters():
    text = SIMPLIFIED + "Smart quotes from a Windows paste: " + "x" * 10
    data = text.encode() + b"\x93quoted\x94\n"  # two Windows-1252 quotes pasted into UTF-8
    assert read_text(data) == (
        text + "\ufffdquoted\ufffd\n",
        f"2 bytes that are not UTF-8 read as U+FFFD (the first at byte {len(text.encode())})",
    )
    cut = SIMPLIFIED.rstrip().encode()[:-1]  # a character cut at the end: two of its three bytes
    assert read_text(cut) == (
        SIMPLIFIED.rstrip()[:-1] + "\ufffd",
        f"2 bytes that are not UTF-8 read as U+FFFD (the first at byte {len(cut) - 2})",
    )


def test_what_no_encoding_reads_stays_unreadable():
    with pytest.raises(UnicodeDecodeError) as caught:
        read_text(bytes(range(0x80, 0x100)) * 2)
    assert caught.value.encoding == "utf-8" and caught.value.start == 0
    assert decode_text(b"\xff" * 64, "replace") == "\ufffd" * 64
    assert guess_legacy(SIMPLIFIED.encode("gbk") + b"\x00") is None  # NUL: binary, not text
    assert guess_legacy(b"plain ascii") is None


def test_random_bytes_are_not_taken_for_text():
    rng = random.Random(7)
    guessed = []
    for size in (40, 200, 1000, 5000):
        for _ in range(300):
            data = rng.randbytes(size).replace(b"\x00", b"\x01")
            if guess_legacy(data) is not None:
                guessed.append(data)
    assert guessed == []


def test_a_long_note_is_guessed_from_its_start():
    data = (SIMPLIFIED * 6000).encode("gbk")
    assert len(data) > 1_000_000
    assert read_text(data)[0] == SIMPLIFIED * 6000


@pytest.mark.parametrize(
    ("name", "codec", "expected"),
    [
        ("会议.md", "gbk", "GBK"),
        ("數據庫.md", "gbk", "GBK"),
        ("舊筆記.md", "big5", "Big5"),
        ("障害の記録.md", "cp932", "Shift-JIS"),
    ],
)
def test_a_short_name_is_read_in_its_own_encoding(name: str, codec: str, expected: str):
    """A file name is a few characters: `舊筆記` in Big5 is common hanzi as GBK too (`侣掸癘`, whose
    last is Traditional): Big5 wins such a tie; and EUC-JP's kana are GB2312's, at the same bytes."""
    assert guess_legacy(name.encode(codec)) == (name, expected)
