"""Charts as inline SVG, written by hand: the site opens from disk on a machine with no
network, so no chart library and no script from elsewhere draws them.

Two shapes cover the viewer's plots: :func:`interval_bars` (one bar per row with its
95% interval, floors drawn apart and the best floor as a dashed line) and
:func:`grouped_bars` (per row, one bar per series: R@1 by intent or source, restore
fidelity per measure). Values are percentages; each axis ends just above its data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

#: Series colours (colour-blind safe, Okabe-Ito), then the floors' grey.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
FLOOR = "#9a9a9a"

_ROW = 22  # pixels per bar row
_LABEL_W = 300  # the label column
_PLOT_W = 420
_PAD = 10


@dataclass(frozen=True)
class Bar:
    """One row of :func:`interval_bars`: a value with its interval (None: not shown)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    floor: bool = False


def _x(v: float, top: float) -> float:
    return _LABEL_W + _PLOT_W * max(0.0, min(v, top)) / top


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}"


#: Axis ends a percentage plot may take, each with its tick step: the smallest that holds
#: the data, so values under 18 are not squeezed into the left fifth of a 0-100 axis.
_TOPS = ((10.0, 1), (20.0, 2), (25.0, 5), (50.0, 5), (100.0, 10))


def axis_top(values: Sequence[float | None]) -> float:
    """The axis end for ``values`` (percentages): 10, 20, 25, 50 or 100; above 100 the
    next multiple of 20."""
    high = max((v for v in values if v is not None), default=0.0)
    for top, _ in _TOPS:
        if high <= top:
            return top
    return float(20 * -(-high // 20))


def _axis(y0: float, y1: float, top: float) -> list[str]:
    out = []
    step = next((s for t, s in _TOPS if t == top), 20)
    for t in range(0, int(top) + 1, step):
        x = _x(t, top)
        out.append(
            f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}" stroke="#e4e4e4"/>'
            f'<text x="{x:.1f}" y="{y1 + 14}" font-size="10" text-anchor="middle" '
            f'fill="#555">{t}</text>'
        )
    return out


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'font-family="sans-serif"><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


def interval_bars(title: str, bars: Sequence[Bar], *, top: float | None = None) -> str:
    """Horizontal bars with 95% interval whiskers; floors in grey, and the highest floor
    as a dashed line across the plot (a figure left of it is no evidence of memory). The
    axis ends at ``top``, by default at :func:`axis_top` of the bars and whiskers."""
    if top is None:
        top = axis_top([x for b in bars for x in (b.value, b.high)])
    height = _PAD * 2 + 24 + _ROW * len(bars) + 20
    body = [
        f'<text x="{_PAD}" y="{_PAD + 12}" font-size="13" font-weight="bold">{escape(title)}</text>'
    ]
    y0 = _PAD + 24
    body += _axis(y0, y0 + _ROW * len(bars), top)
    floors = [b.value for b in bars if b.floor and b.value is not None]
    for i, b in enumerate(bars):
        y = y0 + _ROW * i
        colour = FLOOR if b.floor else PALETTE[0]
        body.append(
            f'<text x="{_LABEL_W - 6}" y="{y + 15}" font-size="11" text-anchor="end">'
            f"{escape(b.label)}</text>"
        )
        if b.value is None:
            body.append(f'<text x="{_LABEL_W + 4}" y="{y + 15}" font-size="11">–</text>')
            continue
        w = _x(b.value, top) - _LABEL_W
        tip = f"{b.label}: {_fmt(b.value)}"
        if b.low is not None and b.high is not None:
            tip += f" [{_fmt(b.low)}, {_fmt(b.high)}]"
        body.append(
            f'<rect class="bar" x="{_LABEL_W}" y="{y + 4}" width="{w:.1f}" height="{_ROW - 8}" '
            f'fill="{colour}"><title>{escape(tip)}</title></rect>'
        )
        if b.low is not None and b.high is not None:
            lo, hi, mid = _x(b.low, top), _x(b.high, top), y + _ROW / 2
            body.append(
                f'<path d="M{lo:.1f} {mid - 5}v10M{lo:.1f} {mid}H{hi:.1f}M{hi:.1f} {mid - 5}v10" '
                'stroke="#222" stroke-width="1.2" fill="none"/>'
            )
        body.append(
            f'<text x="{_x(max(b.high or 0.0, b.value), top) + 4:.1f}" y="{y + 15}" '
            f'font-size="10" fill="#333">{_fmt(b.value)}</text>'
        )
    if floors:
        x = _x(max(floors), top)
        body.append(
            f'<line x1="{x:.1f}" y1="{y0 - 4}" x2="{x:.1f}" y2="{y0 + _ROW * len(bars)}" '
            f'stroke="{FLOOR}" stroke-dasharray="4 3" stroke-width="1.5">'
            f"<title>best floor {_fmt(max(floors))}</title></line>"
        )
    width = _LABEL_W + _PLOT_W + 50
    return _svg(width, height, title, body)


def grouped_bars(
    title: str,
    rows: Sequence[tuple[str, Sequence[float | None]]],
    series: Sequence[str],
    *,
    top: float | None = None,
) -> str:
    """Per row, one thin bar per series (a legend names them); ``None`` draws nothing.
    The axis ends at ``top``, by default at :func:`axis_top` of the values."""
    if top is None:
        top = axis_top([v for _, values in rows for v in values])
    k = max(len(series), 1)
    band = max(_ROW, 8 * k + 8)
    legend_h = 18
    height = _PAD * 2 + 24 + legend_h + band * len(rows) + 20
    body = [
        f'<text x="{_PAD}" y="{_PAD + 12}" font-size="13" font-weight="bold">{escape(title)}</text>'
    ]
    lx = _LABEL_W
    for j, name in enumerate(series):
        colour = PALETTE[j % len(PALETTE)]
        body.append(
            f'<rect x="{lx}" y="{_PAD + 22}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{lx + 14}" y="{_PAD + 31}" font-size="10">{escape(name)}</text>'
        )
        lx += 24 + 7 * len(name)
    y0 = _PAD + 24 + legend_h
    body += _axis(y0, y0 + band * len(rows), top)
    bar_h = (band - 8) / k
    for i, (label, values) in enumerate(rows):
        y = y0 + band * i
        body.append(
            f'<text x="{_LABEL_W - 6}" y="{y + band / 2 + 4:.1f}" font-size="11" '
            f'text-anchor="end">{escape(label)}</text>'
        )
        for j, v in enumerate(values):
            if v is None:
                continue
            colour = PALETTE[j % len(PALETTE)]
            by = y + 4 + bar_h * j
            tip = f"{label}, {series[j] if j < len(series) else j}: {_fmt(v)}"
            body.append(
                f'<rect class="bar" x="{_LABEL_W}" y="{by:.1f}" '
                f'width="{_x(v, top) - _LABEL_W:.1f}" height="{max(bar_h - 1, 1):.1f}" '
                f'fill="{colour}"><title>{escape(tip)}</title></rect>'
            )
    width = max(_LABEL_W + _PLOT_W + 50, lx + 10)
    return _svg(width, height, title, body)
