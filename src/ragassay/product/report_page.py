"""The report as one HTML file (inline CSS, SVG and a small script; no network) or as Markdown.

Texts from the data reach the HTML in two ways only: escaped into the markup, or inside the data
block behind the query pages, which is gzipped JSON in base64 (a third of the size of the JSON for
real chunk texts, and nothing in it can close the script); the script puts those texts on the page
with ``textContent``, never as markup.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from typing import Any

from .formatting import fmt_value, markdown_cell, render_table
from .report_model import Report, Section, Table
from .svg import query_href

CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1080px;margin:0 auto;padding:24px}h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:0 0 8px}
section{background:#fff;border:1px solid #e2e5ea;border-radius:8px;padding:16px 18px;margin:16px 0}
table{border-collapse:collapse;width:100%;font-size:13.5px}th,td{padding:5px 8px;border-bottom:1px solid #eceef2;
  text-align:left;vertical-align:top}
th{background:#f1f3f6;position:sticky;top:0;cursor:pointer;user-select:none;white-space:nowrap}
  th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr[data-q]{cursor:pointer}tr[data-q]:hover{background:#eef3fb}.scroll{overflow:auto;max-height:560px}
.note{color:#4a5363;margin:4px 0 10px}svg{max-width:100%;height:auto;display:block;margin:6px 0}.plots{display:flex;
  flex-wrap:wrap;gap:8px}
nav{position:sticky;top:0;background:#f6f7f9;padding:6px 0;z-index:1}nav a{margin-right:12px}.meta{color:#6b7384;
  font-size:13px}
input.filter{margin:4px 0 8px;padding:5px 8px;width:280px;border:1px solid #c9ced8;border-radius:5px}
#panel{position:fixed;top:0;right:0;bottom:0;width:min(760px,96vw);background:#fff;border-left:1px solid #c9ced8;
box-shadow:-8px 0 24px rgba(0,0,0,.12);overflow:auto;padding:18px 22px;z-index:5}#panel h2{font-size:19px;
  margin-right:70px}
#panel h3{font-size:15px;margin:18px 0 6px}#panel .close{position:absolute;top:14px;right:18px}.chunk{color:#4a5363;
  font-size:13px}.id{white-space:nowrap}
.gold{background:#eef8f0}.lab{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12.5px}
.lab-correct{background:#3a9a5b}.lab-partial{background:#e0a030}.lab-hallucinated{background:#b8463f}
  .lab-abstained{background:#8c8c8c}
.lab-error{background:#555}blockquote{margin:4px 0;padding:6px 10px;background:#f4f6f9;border-left:3px solid #c9ced8;
  white-space:pre-wrap}
"""

SCRIPT = r"""
(function(){
let D = {queries: {}, chunks: {}, runs: [], labels: {qrels: 'unknown', answers: 'unknown'}};
async function load(){const b64=document.getElementById('report-data').textContent.trim();
  if(typeof DecompressionStream==='undefined'){throw new Error('this browser cannot unpack the query pages '+
    '(it needs DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or newer)');}
  const bytes=Uint8Array.from(atob(b64),c=>c.charCodeAt(0));
  const text=await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
  D=JSON.parse(text);}
function h(tag, attrs, ...kids){const e=document.createElement(tag);for(const k in (attrs||{})){
  if(k==='class')e.className=attrs[k];else e.setAttribute(k,attrs[k]);}
  for(const c of kids.flat()){if(c==null)continue;
    e.appendChild(typeof c==='string'||typeof c==='number'?document.createTextNode(String(c)):c);}return e;}
function fmt(v){return v==null?'':(typeof v==='number'&&!Number.isInteger(v)?v.toFixed(4):String(v));}
function lab(l){return l?h('span',{class:'lab lab-'+String(l).replace(/[^a-z]/g,'')},String(l)):'';}
const panel=document.getElementById('panel');
function showQuery(id){
  const p=D.queries[id];panel.textContent='';
  panel.appendChild(h('a',{class:'close',href:'#'},'close \u00d7'));
  if(!p){panel.appendChild(h('p',null,'No query '+id+' in this report.'));panel.hidden=false;return;}
  panel.appendChild(h('h2',null,id+(p.question?': '+p.question:'')));
  if(p.metrics){const runs=Object.keys(p.metrics);const ms=Object.keys(p.metrics[runs[0]]);
    panel.appendChild(h('table',null,h('thead',null,h('tr',null,h('th',null,'run'),ms.map(m=>h('th',{class:'num'},m)))),
      h('tbody',null,runs.map(r=>h('tr',null,h('td',null,r),ms.map(m=>h('td',{class:'num'},fmt(p.metrics[r][m]))))))));}
  if(p.reference!=null||p.response!=null||p.check){
    panel.appendChild(h('h3',null,'Answer'));
    if(p.reference!=null)panel.appendChild(h('div',null,h('b',null,'reference'),h('blockquote',null,p.reference)));
    if(p.response!=null)panel.appendChild(h('div',null,h('b',null,'system answer '),
      p.check?lab(p.check.label||'error'):'',
      p.human_label?h('span',null,'  '+D.labels.answers+': ',lab(p.human_label)):'',h('blockquote',null,p.response)));
    if(p.check){const c=p.check;const bits=[];
      if(c.decided_by)bits.push('decided by '+c.decided_by);if(c.grounded)bits.push('grounded: '+c.grounded);
        if(c.fault)bits.push('fault: '+c.fault);
      if(bits.length)panel.appendChild(h('p',{class:'note'},bits.join('; ')));
      if(c.rationale)panel.appendChild(h('p',null,c.rationale));if(c.error)panel.appendChild(h('p',null,
        'error: '+c.error));
      if(c.unsupported_claims)panel.appendChild(h('ul',null,c.unsupported_claims.map(x=>h('li',null,
        'unsupported: '+x))));}}
  const gold=new Map(p.gold||[]);
  for(const [key,who] of [['gold',D.labels.qrels],['second',D.labels.second]]){if(!p[key])continue;
    panel.appendChild(h('h3',null,'Judged by '+who+', relevant first'));
    panel.appendChild(h('table',null,h('tbody',null,p[key].map(([d,g])=>h('tr',null,h('td',{class:'id'},d),h('td',{
      class:'num'},g),
      h('td',{class:'chunk'},D.chunks[d]||''))))));}
  const heads=['rank','chunk',D.labels.qrels,'judge'].concat(D.labels.second!=null?[D.labels.second]:[],['text']);
  const grade=g=>g==null?'unjudged':g;
  for(const run of Object.keys(p.runs||{})){
    panel.appendChild(h('h3',null,'Top '+p.runs[run].length+' of '+run));
    if(!p.runs[run].length){panel.appendChild(h('p',{class:'note'},'This run returned nothing for this query.'));
      continue;}
    panel.appendChild(h('table',null,h('thead',null,h('tr',null,heads.map(x=>h('th',null,x)))),
      h('tbody',null,p.runs[run].map(([d,g,j,s],i)=>h('tr',{class:(g>0?'gold':'')},h('td',{class:'num'},i+1),h('td',{
        class:'id'},d),
        h('td',{class:'num'},grade(g)),h('td',{class:'num'},j==null?'':j),
        D.labels.second!=null?h('td',{class:'num'},grade(s)):null,h('td',{class:'chunk'},D.chunks[d]||''))))));
    const cov=p.coverage&&(p.coverage[run]||(Object.keys(D.runs).length<2&&p.coverage.run));
    if(cov){panel.appendChild(h('p',null,h('b',null,'coverage: '),cov.label,cov.error?' ('+cov.error+')':''));
      if(cov.nuggets.length)panel.appendChild(h('ul',null,cov.nuggets.map(([t,v,s])=>h('li',null,
        (v?'[vital] ':'[okay] ')+t+' \u2014 '+(s||'')))));}}
  panel.hidden=false;panel.scrollTop=0;}
function route(){const m=location.hash.match(/^#q=(.*)$/);if(m){showQuery(decodeURIComponent(m[1]));}else{
  panel.hidden=true;}}
window.addEventListener('hashchange',route);
document.addEventListener('keydown',e=>{if(e.key==='Escape'&&!panel.hidden){location.hash='';}});
document.querySelectorAll('tr[data-q]').forEach(tr=>tr.addEventListener('click',e=>{if(e.target.closest('a'))return;
  location.hash='#q='+encodeURIComponent(tr.dataset.q);}));
document.querySelectorAll('table.sortable').forEach(t=>{const ths=t.tHead.rows[0].cells;
  Array.from(ths).forEach((th,i)=>th.addEventListener('click',()=>{const asc=th.getAttribute('aria-sort')!=='ascending';
    Array.from(ths).forEach(x=>x.removeAttribute('aria-sort'));th.setAttribute('aria-sort',
      asc?'ascending':'descending');
    const rows=Array.from(t.tBodies[0].rows);const key=r=>{const c=r.cells[i];const v=c.dataset.v;
      return v!==undefined?parseFloat(v):c.textContent;};
    rows.sort((a,b)=>{const x=key(a),y=key(b);
      const n=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));return asc?n:-n;});
    rows.forEach(r=>t.tBodies[0].appendChild(r));}));});
document.querySelectorAll('input.filter').forEach(inp=>inp.addEventListener('input',()=>{
  const t=document.getElementById(inp.dataset.table);
  const s=inp.value.toLowerCase();Array.from(t.tBodies[0].rows).forEach(r=>{
    r.hidden=s&&!r.textContent.toLowerCase().includes(s);});}));
load().then(()=>{document.body.dataset.ready='yes';route();},e=>{panel.textContent=String(e.message||e);
  panel.hidden=false;});
})();
"""


def _cell(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return f"<td>{'' if v is None else html.escape(str(v))}</td>"
    if isinstance(v, (int, float)):
        text = fmt_value(v)
        return f"<td class=num data-v='{v!r}'>{html.escape(text)}</td>" if v == v else "<td class=num>nan</td>"
    return f"<td>{html.escape(str(v))}</td>"


def table_html(t: Table, table_id: str) -> str:
    def numeric(i: int) -> bool:
        vals = [r[i] for r in t.rows if i < len(r) and r[i] not in ("", None)]
        return bool(vals) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)

    head = "".join(
        f"<th class=num>{html.escape(h)}</th>" if numeric(i) else f"<th>{html.escape(h)}</th>"
        for i, h in enumerate(t.headers)
    )
    rows = []
    for n, r in enumerate(t.rows):
        q = t.queries[n] if t.queries else None
        cells = "".join(_cell(v) for v in r)
        if q is not None:
            first = f"<td><a href='{html.escape(query_href(q), quote=True)}'>{html.escape(str(r[0]))}</a></td>"
            cells = first + "".join(_cell(v) for v in r[1:])
            rows.append(f"<tr data-q='{html.escape(str(q), quote=True)}'>{cells}</tr>")
        else:
            rows.append(f"<tr>{cells}</tr>")
    search = (
        f"<input class=filter type=search placeholder='filter rows' aria-label='filter rows' data-table='{table_id}'>"
        if t.filter
        else ""
    )
    return (
        f"{search}<div class=scroll><table class=sortable id='{table_id}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def data_block(data: Any) -> str:
    """The query pages' data as the page carries it: JSON, gzipped (fixed mtime: the same report is
    the same bytes), in base64."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def read_data_block(page: str) -> Any:
    """The data behind a report's query pages (for tests and for tools that read reports)."""
    start = page.index("id='report-data'>") + len("id='report-data'>")
    return json.loads(gzip.decompress(base64.b64decode(page[start : page.index("</script>", start)])))


def render_html(report: Report) -> str:
    short = [s.title.split(":")[0] for s in report.sections]
    names = [t if short.count(t) == 1 else s.title for t, s in zip(short, report.sections)]
    nav = " ".join(f"<a href='#s{i}'>{html.escape(n)}</a>" for i, n in enumerate(names))
    body = []
    for i, s in enumerate(report.sections):
        parts = [f"<section id='s{i}'><h2>{html.escape(s.title)}</h2>"]
        if s.note:
            parts.append(f"<p class=note>{html.escape(s.note)}</p>")
        if s.plots:
            parts.append("<div class=plots>" + "".join(s.plots) + "</div>")
        parts += [table_html(t, f"t{i}-{j}") for j, t in enumerate(s.tables)]
        body.append("".join(parts) + "</section>")
    title = html.escape(report.title)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{title}</title><style>{CSS}</style></head><body><main><h1>{title}</h1>"
        f"<p class=meta>Made by ragassay. Metrics follow trec_eval's conventions. Click any query to open it.</p>"
        f"<nav>{nav}</nav>{''.join(body)}</main><aside id=panel hidden aria-label='query'></aside>"
        f"<script type='application/json' id='report-data'>{data_block(report.pages)}</script>"
        f"<script>{SCRIPT}</script></body></html>"
    )


MARKDOWN_ROWS = 20  # rows of a per-query table in Markdown (a pull-request comment, not an archive)


def static_note(note: str) -> str:
    """A section's note without what only the HTML page can do (click, sort, filter)."""
    sentences = re.split(r"(?<=\.)\s+", note or "")
    return " ".join(x for x in sentences if not re.match(r"(click|type to)\b", x, re.I)).strip()


def render_markdown(report: Report) -> str:
    def section(s: Section) -> str:
        parts = [f"## {markdown_cell(s.title)}"]
        note = static_note(s.note)
        if note:
            parts.append(markdown_cell(note))
        for t in s.tables:
            rows = t.rows[:MARKDOWN_ROWS] if t.queries else t.rows
            parts.append(render_table(t.headers, rows, "markdown"))
            if len(rows) < len(t.rows):
                parts.append(f"(the first {len(rows)} of {len(t.rows)} rows; the HTML report has every one)")
        return "\n\n".join(parts)

    return f"# {markdown_cell(report.title)}\n\n" + "\n\n".join(section(s) for s in report.sections) + "\n"
