"""HTML pieces of the static site: the page frame with its inline style, tables, and
the drill-down filter (a few lines of vanilla JavaScript, inline: the site opens from
disk with no network)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #ddd;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f4f4f4}td.num{text-align:right;white-space:nowrap}
tr.floor td{color:#777;background:#fafafa}tr.section td{background:#eef3f8;font-weight:bold}
.note{color:#555}.warn{background:#fff4d6;padding:.4em .7em;border-left:4px solid #e0a800}
.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;background:#eee}
.exact{background:#d7f0dd}.early,.late{background:#fde2d4}.none{background:#eee}
.leak{background:#f8d0d0}.keep{background:#dcebfa}.forget{background:#efe0f7}
nav a{margin-right:1em}details{margin:.4em 0}summary{cursor:pointer}
.filters select{margin-right:1em}svg{display:block;margin:.8em 0;max-width:100%}
"""

FILTER_JS = """
(function(){
  var sel=document.querySelectorAll('select[data-col]');
  var rows=Array.prototype.slice.call(document.querySelectorAll('#queries tbody tr'));
  var count=document.getElementById('shown');
  var pager=document.getElementById('pager');
  var size=pager?parseInt(pager.dataset.size,10):rows.length, page=0, hits=[];
  function draw(){
    var pages=Math.max(1,Math.ceil(hits.length/size));
    if(page>=pages)page=pages-1;
    rows.forEach(function(r){r.style.display='none';});
    hits.slice(page*size,(page+1)*size).forEach(function(r){r.style.display='';});
    if(count)count.textContent=hits.length;
    if(pager){
      pager.hidden=pages<2;
      document.getElementById('page').textContent=(page+1)+' of '+pages;
      document.getElementById('prev').disabled=page===0;
      document.getElementById('next').disabled=page>=pages-1;
    }
  }
  function apply(){
    var want={};sel.forEach(function(s){if(s.value)want[s.dataset.col]=s.value;});
    var h=[];for(var k in want)h.push(k+'='+encodeURIComponent(want[k]));
    // A list split by system: another system's rows are on its own page.
    var sys=document.getElementById('f-system'), opt=sys&&sys.options[sys.selectedIndex];
    if(opt&&opt.dataset.page){location.href=opt.dataset.page+'#'+h.join('&');return;}
    hits=rows.filter(function(r){
      for(var k in want){if(r.dataset[k]!==want[k])return false;}return true;});
    page=0;draw();
    history.replaceState(null,'',h.length?'#'+h.join('&'):location.pathname);
  }
  if(pager){
    document.getElementById('prev').addEventListener('click',function(){page--;draw();});
    document.getElementById('next').addEventListener('click',function(){page++;draw();});
  }
  var init={};location.hash.replace(/^#/,'').split('&').forEach(function(p){
    var kv=p.split('=');if(kv[0])init[kv[0]]=decodeURIComponent(kv[1]||'');});
  sel.forEach(function(s){if(init[s.dataset.col]!==undefined)s.value=init[s.dataset.col];
    s.addEventListener('change',apply);});
  apply();
})();
"""


def e(text: object) -> str:
    """HTML-escaped text (``–`` for None)."""
    return "–" if text is None else escape(str(text))


def page(title: str, body: str, *, root: str = "", script: str = "") -> str:
    """A whole page; ``root``: the relative path back to the site's top (``../``)."""
    nav = f'<nav><a href="{root}index.html">summary</a><a href="{root}runs.html">runs</a></nav>'
    js = f"<script>{script}</script>" if script else ""
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{e(title)}</title><style>{STYLE}</style></head><body>"
        f"{nav}<h1>{e(title)}</h1>{body}{js}</body></html>\n"
    )


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    attrs: str = "",
    row_attrs: Sequence[str] | None = None,
    num: Iterable[int] = (),
) -> str:
    """A table of already-escaped cells (``num``: right-aligned columns)."""
    right = set(num)
    head = "".join(f"<th>{h}</th>" for h in header)
    out = [f"<table {attrs}><thead><tr>{head}</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        extra = f" {row_attrs[i]}" if row_attrs and row_attrs[i] else ""
        cells = "".join(
            f'<td class="num">{c}</td>' if j in right else f"<td>{c}</td>"
            for j, c in enumerate(row)
        )
        out.append(f"<tr{extra}>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def link(href: str, text: str, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<a href="{escape(href, quote=True)}"{c}>{e(text)}</a>'


def tag(text: str, cls: str = "") -> str:
    return f'<span class="tag {escape(cls, quote=True)}">{e(text)}</span>'


def select(col: str, label: str, values: Iterable[str]) -> str:
    """A filter over the drill-down table's ``data-<col>`` attribute."""
    opts = "".join(f'<option value="{escape(v, quote=True)}">{e(v)}</option>' for v in values)
    return (
        f'<label>{e(label)} <select data-col="{escape(col, quote=True)}" id="f-{col}">'
        f'<option value="">all</option>{opts}</select></label>'
    )
