"""Text that fits its place: a title measured in its font, made smaller or broken into lines to fit a width.

Widths are measured with matplotlib's text layout in DejaVu Sans (what both the PNG and, here, the
browser draw), so a title is fitted before it is drawn, and a figure's layout reserves its lines.
"""

from __future__ import annotations

__all__ = ["fit_text", "text_width"]


def text_width(text: str, points: float, dpi: float = 100, bold: bool = False) -> float:
    """Width in pixels of one line of ``text`` at ``points`` in DejaVu Sans, at ``dpi``."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    font = FontProperties(family="DejaVu Sans", weight="bold" if bold else "normal", size=points * dpi / 72)
    return TextToPath().get_text_width_height_descent(text, font, ismath=False)[0]


def _parts(text: str) -> list[str]:
    """``text`` split after each ``, `` or ``; `` outside parentheses (``weights=causal(tau=2, ...)`` stays whole)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch in ",;" and depth == 0 and text[i + 1: i + 2] == " ":
            parts.append(text[start: i + 1])
            start = i + 2
    return parts + [text[start:]]


def fit_text(text: str, width: float, sizes: tuple[float, ...] = (9, 8, 7), dpi: float = 100,
             bold: bool = False) -> tuple[str, float]:
    r"""``text`` and a font size at which it fits ``width`` px: the largest size that fits on one line,
    else the smallest size with the text broken after ``;`` or ``,`` outside parentheses (a part too
    long on its own stays whole).

    Examples
    --------
    >>> fit_text("delta=0.25, T=2, weights=mean", 400)
    ('delta=0.25, T=2, weights=mean', 9)
    >>> fit_text("delta=0.25, T=2, weights=attention(tau=2, scale=sqrt_d)", 200)[0].count("\n") >= 1
    True
    """
    for size in sizes:
        if text_width(text, size, dpi, bold) <= width:
            return text, size
    size = sizes[-1]
    parts = _parts(text)
    lines = [parts[0]]
    for part in parts[1:]:
        if text_width(f"{lines[-1]} {part}", size, dpi, bold) <= width:
            lines[-1] = f"{lines[-1]} {part}"
        else:
            lines.append(part)
    return "\n".join(lines), size
