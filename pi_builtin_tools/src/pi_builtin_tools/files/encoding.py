"""Text encodings of files read and edited.

A file is never silently corrupted: :func:`detect_encoding` tells UTF-8 (with or without BOM),
UTF-16/UTF-32 with a BOM, legacy single-byte text (Windows-1252 or Latin-1, which decode and
encode back byte-exactly) and binary content apart. :func:`decode_text` keeps a BOM as U+FEFF
(as Pi does for UTF-8), so :func:`encode_text` of the same text gives the same bytes back.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from pi_builtin_tools.files.truncate import format_size

SNIFF_BYTES = 8192
"""How much of the start of a file decides between text and binary."""


@dataclass(frozen=True)
class TextEncoding:
    """How a file's bytes become text: Python ``codec``, a ``label`` for messages, and whether
    the file is plain UTF-8 (``is_utf8``)."""

    codec: str
    label: str

    @property
    def is_utf8(self) -> bool:
        return self.codec == "utf-8"

    @property
    def ascii_compatible(self) -> bool:
        """True when ``\\n`` is the byte 0x0A and never part of another character."""
        return self.codec in ("utf-8", "cp1252", "latin-1")


UTF8 = TextEncoding("utf-8", "UTF-8")
UTF16LE = TextEncoding("utf-16-le", "UTF-16LE")
UTF16BE = TextEncoding("utf-16-be", "UTF-16BE")
UTF32LE = TextEncoding("utf-32-le", "UTF-32LE")
UTF32BE = TextEncoding("utf-32-be", "UTF-32BE")
CP1252 = TextEncoding("cp1252", "Windows-1252")
LATIN1 = TextEncoding("latin-1", "Latin-1 (ISO-8859-1)")

_BOMS: list[tuple[bytes, TextEncoding]] = [
    (codecs.BOM_UTF32_LE, UTF32LE),
    (codecs.BOM_UTF32_BE, UTF32BE),
    (codecs.BOM_UTF8, UTF8),
    (codecs.BOM_UTF16_LE, UTF16LE),
    (codecs.BOM_UTF16_BE, UTF16BE),
]

_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\x0b\x0c\x1b\x08") + b"\x7f"


def _valid_utf8(data: bytes, *, complete: bool) -> bool:
    if data.isascii():  # C speed, and the common case
        return True
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return False
    return True


def _bomless_utf16(head: bytes) -> TextEncoding | None:
    """UTF-16 without a BOM when (nearly) every other byte is NUL and the text decodes."""
    even, odd = head[0::2], head[1::2]
    if len(head) < 4 or len(head) % 2:
        head = head[: len(head) - len(head) % 2]
        even, odd = head[0::2], head[1::2]
    if len(head) < 4:
        return None
    for zeros, others, encoding in ((odd, even, UTF16LE), (even, odd, UTF16BE)):
        if zeros.count(0) >= 0.9 * len(zeros) and others.count(0) == 0:
            try:
                text = head.decode(encoding.codec)
            except UnicodeDecodeError:
                continue
            if all(ch.isprintable() or ch in "\t\n\r\x0c" for ch in text):
                return encoding
    return None


_TEXT_CONTROLS = "\t\n\r\x0b\x0c\x1b\x08"


def _looks_like_text(data: bytes, encoding: TextEncoding) -> bool:
    """True when ``data`` (a sample starting with ``encoding``'s BOM) decodes strictly (a
    sequence cut at the end is allowed: a truncated text file is still text), holds no NUL and
    at most 10% characters that are neither printable nor usual whitespace/controls."""
    decoder = codecs.getincrementaldecoder(encoding.codec)("strict")
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return False
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        return False
    odd = sum(1 for ch in text if not ch.isprintable() and ch not in _TEXT_CONTROLS)
    return odd <= len(text) // 10


def bom_length(data: bytes, encoding: TextEncoding) -> int:
    """Length of ``encoding``'s byte order mark at the start of ``data`` (0: none)."""
    for bom, candidate in _BOMS:
        if data.startswith(bom):
            return len(bom) if candidate == encoding else 0
    return 0


def detect_encoding(data: bytes, *, complete: bool = True) -> TextEncoding | None:
    """The encoding of a file whose content (``complete``) or first bytes is ``data``;
    ``None`` for binary content.

    Order: a BOM decides (UTF-32, UTF-8, UTF-16; a UTF-16/32 BOM only when the sample after it
    decodes strictly to text without NULs, mostly printable, else binary); NUL bytes in the first :data:`SNIFF_BYTES`
    mean UTF-16 without BOM when every other byte is NUL and the rest is printable text, else
    binary; so do mostly control characters; valid UTF-8 is UTF-8 (a sequence cut at the end of an
    incomplete sample is allowed); otherwise Windows-1252 when it decodes, else Latin-1.
    """
    head = data[:SNIFF_BYTES]
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            if encoding.is_utf8:
                return encoding
            return encoding if _looks_like_text(head, encoding) else None
    if b"\x00" in head:
        return _bomless_utf16(head)
    if head and len(head) - len(head.translate(None, _CONTROL)) > len(head) // 10:
        return None
    if _valid_utf8(data, complete=complete):
        return UTF8
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return LATIN1
    return CP1252


def decode_text(data: bytes, encoding: TextEncoding) -> str:
    """``data`` as text; a BOM stays as U+FEFF. UTF-8 errors become U+FFFD (only when a large
    file turns out invalid past its sample)."""
    return data.decode(encoding.codec, "replace")


def encode_text(text: str, encoding: TextEncoding) -> bytes:
    """Inverse of :func:`decode_text`: ``encode_text(decode_text(b, e), e) == b`` for files
    :func:`detect_encoding` accepted. Raises ``UnicodeEncodeError`` for characters the encoding
    cannot hold (e.g. an emoji into Latin-1)."""
    return text.encode(encoding.codec)


_SIGNATURES: list[tuple[bytes, int, str]] = [
    (b"PK\x03\x04", 0, "ZIP archive (also docx/xlsx/odt/jar)"),
    (b"%PDF", 0, "PDF document"),
    (b"\x7fELF", 0, "ELF executable"),
    (b"\x1f\x8b", 0, "gzip archive"),
    (b"BZh", 0, "bzip2 archive"),
    (b"\xfd7zXZ\x00", 0, "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", 0, "zstd archive"),
    (b"SQLite format 3\x00", 0, "SQLite database"),
    (b"\xca\xfe\xba\xbe", 0, "Java class or Mach-O binary"),
    (b"\xcf\xfa\xed\xfe", 0, "Mach-O binary"),
    (b"MZ", 0, "Windows executable"),
    (b"\x00asm", 0, "WebAssembly module"),
    (b"ustar", 257, "tar archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 0, "OLE2 document (doc/xls/msi)"),
    (b"OggS", 0, "Ogg media"),
    (b"ID3", 0, "MP3 audio"),
    (b"fLaC", 0, "FLAC audio"),
    (b"\x1aE\xdf\xa3", 0, "Matroska/WebM video"),
    (b"II*\x00", 0, "TIFF image"),
    (b"MM\x00*", 0, "TIFF image"),
    (b"\x00\x00\x01\x00", 0, "ICO image"),
]


def binary_kind(head: bytes) -> str | None:
    """A short name of the binary format starting with ``head`` (``None``: unknown)."""
    for magic, offset, name in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return name
    if head[4:8] == b"ftyp":
        return "MP4/QuickTime media"
    if head[:4] == b"RIFF":
        return "RIFF media (wav/avi)"
    return None


def describe_binary(display_path: str, head: bytes, size: int) -> str:
    """The read error for a binary file: what it is, how big, and what to do instead."""
    kind = binary_kind(head)
    what = f"{kind}, " if kind else ""
    return (
        f"Cannot read {display_path}: binary file ({what}{format_size(size)}, {size} bytes). "
        "read returns text files and images (jpg, png, gif, webp, bmp); use bash with a tool "
        "that understands this format to inspect it."
    )


__all__ = [
    "CP1252",
    "LATIN1",
    "SNIFF_BYTES",
    "UTF8",
    "UTF16BE",
    "UTF16LE",
    "UTF32BE",
    "UTF32LE",
    "TextEncoding",
    "binary_kind",
    "bom_length",
    "decode_text",
    "describe_binary",
    "detect_encoding",
    "encode_text",
]
