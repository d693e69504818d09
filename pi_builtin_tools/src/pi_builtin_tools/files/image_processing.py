"""Images for the read tool: MIME type from magic bytes, resizing with Pillow.

Defaults as Pi: at most 2000×2000 pixels and 4.5 MiB of base64 payload, JPEG quality 80. An
image within the limits is passed through byte for byte; otherwise it is resized (aspect kept,
Lanczos), encoded as PNG and as JPEG at qualities 80, 85, 70, 55, 40, and the first candidate under
the payload limit wins; failing that the dimensions shrink by ×0.75 down to 1×1. BMP is converted
to PNG (models do not take BMP).
"""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

IMAGE_SNIFF_BYTES = 4100
"""How many leading bytes the MIME sniffing looks at (as Pi's file-type check)."""

DEFAULT_MAX_IMAGE_BYTES = 4_718_592
"""4.5 MiB of base64 payload: headroom below the 5 MB limit of common providers."""


def detect_image_mime(head: bytes) -> str | None:
    """``image/jpeg``, ``image/png``, ``image/gif``, ``image/webp`` or ``image/bmp`` from the
    first bytes of a file; ``None`` for anything else (the extension never matters).

    Pi 1.6's own sniffer: JPEG ``FF D8 FF`` except JPEG-LS (4th byte ``F7``); PNG with an
    ``IHDR`` first chunk and no ``acTL`` (animation) chunk before ``IDAT``; ``GIF87a`` /
    ``GIF89a``; ``RIFF....WEBP``; BMP only with a plausible header (:func:`_is_bmp`). Anything
    else is read as text.
    """
    if head.startswith(b"\xff\xd8\xff"):
        return None if head[3:4] == b"\xf7" else "image/jpeg"
    if head.startswith(_PNG_SIGNATURE):
        return "image/png" if _is_png(head) and not _is_animated_png(head) else None
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"BM") and _is_bmp(head):
        return "image/bmp"
    return None


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _u32be(head: bytes, offset: int) -> int:
    return int.from_bytes(head[offset : offset + 4].ljust(4, b"\0"), "big")


def _u32le(head: bytes, offset: int) -> int:
    return int.from_bytes(head[offset : offset + 4].ljust(4, b"\0"), "little")


def _u16le(head: bytes, offset: int) -> int:
    return int.from_bytes(head[offset : offset + 2].ljust(2, b"\0"), "little")


def _is_png(head: bytes) -> bool:
    return len(head) >= 16 and _u32be(head, 8) == 13 and head[12:16] == b"IHDR"


def _is_animated_png(head: bytes) -> bool:
    """An ``acTL`` chunk before the first ``IDAT`` among the chunks within ``head``."""
    offset = len(_PNG_SIGNATURE)
    while offset + 8 <= len(head):
        chunk_type = head[offset + 4 : offset + 8]
        if chunk_type == b"acTL":
            return True
        if chunk_type == b"IDAT":
            return False
        next_offset = offset + 8 + _u32be(head, offset) + 4
        if next_offset > len(head):
            return False
        offset = next_offset
    return False


def _is_bmp(head: bytes) -> bool:
    """A BMP header that holds together: declared size 0 or at least 26, the pixel data after
    the headers and inside the file, a DIB header of 12 or 40-124 bytes, one colour plane and
    1, 4, 8, 16, 24 or 32 bits per pixel."""
    if len(head) < 26:
        return False
    declared_size = _u32le(head, 2)
    pixel_offset = _u32le(head, 10)
    dib_size = _u32le(head, 14)
    if declared_size != 0 and declared_size < 26:
        return False
    if pixel_offset < 14 + dib_size:
        return False
    if declared_size != 0 and pixel_offset >= declared_size:
        return False
    if dib_size == 12:
        planes, bits = _u16le(head, 22), _u16le(head, 24)
    elif 40 <= dib_size <= 124:
        if len(head) < 30:
            return False
        planes, bits = _u16le(head, 26), _u16le(head, 28)
    else:
        return False
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)


@dataclass(frozen=True)
class ImageResizeOptions:
    """Resize limits: pixels (``max_width``/``max_height``), base64 characters (``max_bytes``)
    and the first JPEG quality tried (``jpeg_quality``)."""

    max_width: int = 2000
    max_height: int = 2000
    max_bytes: int = DEFAULT_MAX_IMAGE_BYTES
    jpeg_quality: int = 80


@dataclass(frozen=True)
class ProcessedImage:
    """An image ready for the model: base64 ``data``, ``mime_type``, original and shown sizes."""

    data: str
    mime_type: str
    original_width: int
    original_height: int
    width: int
    height: int
    was_resized: bool
    converted_from: str | None = None


def _to_fixed_2(value: float) -> str:
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def dimension_note(image: ProcessedImage) -> str | None:
    """Pi's note for a resized image (``None`` when it was not resized)."""
    if not image.was_resized:
        return None
    scale = _to_fixed_2(image.original_width / image.width)
    return (
        f"[Image: original {image.original_width}x{image.original_height}, displayed at "
        f"{image.width}x{image.height}. Multiply coordinates by {scale} to map to original image.]"
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class ImageDecodeError(Exception):
    """The bytes have an image's magic number but Pillow cannot decode them (corrupt or
    truncated file)."""


def process_image(
    data: bytes, mime_type: str, options: ImageResizeOptions | None = None
) -> ProcessedImage | None:
    """Fit ``data`` (an image of ``mime_type``) within ``options``; ``None`` when it cannot be
    brought under the payload limit even at 1×1. Raises :class:`ImageDecodeError` when it cannot
    be decoded. Blocking: run in a thread."""
    from PIL import Image, ImageOps

    opts = options or ImageResizeOptions()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(data))
            opened.load()
            image = ImageOps.exif_transpose(opened) or opened
    except Exception as exc:
        raise ImageDecodeError(str(exc)) from exc
    try:
        original_width, original_height = image.size
        converted_from = None
        if mime_type == "image/bmp":
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            data, mime_type, converted_from = buffer.getvalue(), "image/png", "image/bmp"
        encoded = _b64(data)
        if (
            original_width <= opts.max_width
            and original_height <= opts.max_height
            and len(encoded) < opts.max_bytes
        ):
            return ProcessedImage(
                encoded,
                mime_type,
                original_width,
                original_height,
                original_width,
                original_height,
                False,
                converted_from,
            )
        width, height = original_width, original_height
        if width > opts.max_width:
            height = round(height * opts.max_width / width)
            width = opts.max_width
        if height > opts.max_height:
            width = round(width * opts.max_height / height)
            height = opts.max_height
        width, height = max(1, width), max(1, height)
        qualities = list(dict.fromkeys([opts.jpeg_quality, 85, 70, 55, 40]))
        while True:
            resized = image.resize((width, height), Image.Resampling.LANCZOS)
            png = io.BytesIO()
            resized.save(png, format="PNG")
            candidates = [(png.getvalue(), "image/png")]
            rgb = resized.convert("RGB")
            for quality in qualities:
                jpeg = io.BytesIO()
                rgb.save(jpeg, format="JPEG", quality=quality)
                candidates.append((jpeg.getvalue(), "image/jpeg"))
            for candidate, candidate_mime in candidates:
                text = _b64(candidate)
                if len(text) < opts.max_bytes:
                    return ProcessedImage(
                        text,
                        candidate_mime,
                        original_width,
                        original_height,
                        width,
                        height,
                        True,
                        converted_from,
                    )
            if width == 1 and height == 1:
                return None
            next_width = 1 if width == 1 else max(1, int(width * 0.75))
            next_height = 1 if height == 1 else max(1, int(height * 0.75))
            if (next_width, next_height) == (width, height):
                return None
            width, height = next_width, next_height
    except Exception:
        return None


__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "IMAGE_SNIFF_BYTES",
    "ImageDecodeError",
    "ImageResizeOptions",
    "ProcessedImage",
    "detect_image_mime",
    "dimension_note",
    "process_image",
]
