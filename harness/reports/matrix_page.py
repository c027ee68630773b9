"""The matrix as one self-contained HTML page: no network, no external script, style or font.

The table is drawn here, in HTML, so the page shows everything before (and without) its script
runs; the small inline script adds the hover tip, the details panel on click, collapsing a rule's
group and hiding rows where every target passes. The details of cells that did not pass sit in
one JSON block that the script reads; passing cells carry nothing but their class.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.check.results import CRASHED, FAILED, PASSED, TIMED_OUT, XFAILED, XPASSED
from harness.reports.matrix_table import CLASS_ROWS, DASH, NOT_RUN, chosen, class_score, score
from harness.reports.problems import CATEGORY_TITLES
from reference.choices import OUTCOMES

#: Per status: CSS class, symbol, and the word in the legend. Symbols and shades both differ, so
#: the page reads in grey scale and for colour-blind readers.
STATUS_LOOK: dict[str, tuple[str, str, str]] = {
    PASSED: ("p", "✓", "passed in every mode"),
    FAILED: ("f", "✗", "failed: a wrong answer"),
    CRASHED: ("c", "‼", "crashed"),
    TIMED_OUT: ("t", "◷", "timed out"),
    XFAILED: ("x", "✗", "failed, as its --xfail file expects"),
    XPASSED: ("u", "✓!", "passed, though its --xfail file expects a failure"),
    NOT_RUN: ("n", DASH, "not run"),
}

_STYLE = """
:root{--p:#d8f0d8;--pf:#145214;--f:#c62828;--c:#1b0b2e;--t:#f2a93b;--x:#f4dada;--u:#fff3a0;
--n:#eee;--line:#ccc;font:14px/1.35 system-ui,"DejaVu Sans",sans-serif;color:#111}
body{margin:16px 20px 120px}h1{font-size:20px;margin:0 0 4px}p{margin:4px 0}
.meta{color:#444}.legend span.s{display:inline-block;min-width:22px;text-align:center;
margin:0 4px 0 12px;border:1px solid var(--line)}
table{border-collapse:collapse}th,td{border:1px solid var(--line);padding:2px 6px}
thead th{position:sticky;top:0;background:#fafafa;z-index:1;vertical-align:bottom}
thead th small{display:block;font-weight:normal;color:#555;max-width:9em;overflow:hidden;
text-overflow:ellipsis;white-space:nowrap}
#scores{margin:12px 0 18px}#scores th{white-space:nowrap}
#scores td{text-align:center;font-variant-numeric:tabular-nums}
#scores td.full{background:var(--p);color:var(--pf)}#scores td.part{background:#fbe3e3;
color:#7a1010;font-weight:600}#scores tr.total td{font-weight:700;border-top:2px solid #888}
#scores td.ok{background:var(--p)}#scores td.bad{background:var(--f);color:#fff;font-weight:700}
#matrix th.case{text-align:left;font-weight:normal;font-family:"DejaVu Sans Mono",monospace;
font-size:12px;white-space:nowrap}
#matrix tr.rule th{text-align:left;background:#eef2f7}#matrix tr.rule td{background:#eef2f7;
text-align:center;font-size:12px}
#matrix tr.rule button{font:inherit;font-weight:700;border:0;background:none;cursor:pointer;
padding:0}tbody.closed tr:not(.rule){display:none}body.diff tr.allpass{display:none}
td.s{text-align:center;min-width:40px;cursor:pointer;font-weight:700}
.s.p{background:var(--p);color:var(--pf)}.s.f{background:var(--f);color:#fff}
.s.c{background:var(--c);color:#fff}.s.t{background:var(--t);color:#000}
.s.x{background:repeating-linear-gradient(135deg,var(--x) 0 4px,#fff 4px 8px);color:#7a1010}
.s.u{background:var(--u);color:#000;outline:2px solid #000;outline-offset:-3px}
.s.n{background:var(--n);color:#777}.s small{font-weight:normal;font-size:10px}
td.s.chg{box-shadow:inset 0 0 0 3px #1565c0}td.s.chg::after{content:"Δ";font-size:10px;
vertical-align:super;color:inherit}td.s.sel{outline:3px solid #000;outline-offset:-2px}
#tip{position:fixed;z-index:5;max-width:560px;background:#222;color:#fff;padding:6px 8px;
border-radius:4px;font-size:12px;pointer-events:none;white-space:pre-wrap}
#panel{position:fixed;left:0;right:0;bottom:0;max-height:45vh;overflow:auto;z-index:4;
background:#fff;border-top:3px solid #333;padding:8px 20px;box-shadow:0 -4px 12px #0003}
#panel h2{font-size:15px;margin:0 0 4px}#panel pre{white-space:pre-wrap;margin:4px 0;
font-size:12px;background:#f6f6f6;padding:6px}#panel .close{float:right}
.tools{margin:8px 0}.tools button,.tools label{margin-right:12px}
"""

_SCRIPT = """
(()=>{const D=JSON.parse(document.getElementById('cells').textContent),
T=JSON.parse(document.getElementById('labels').textContent),
tip=document.getElementById('tip'),panel=document.getElementById('panel');let sel=null;
function info(td){const k=td.dataset.k,row=td.parentElement.querySelector('th.case').textContent,
t=T[td.cellIndex-1];const d=k===undefined?null:D[+k];
return {t,row,d,status:td.dataset.s}}
function brief(i){let s=i.t+' \\u00b7 '+i.row+'\\n'+i.status;if(!i.d)return s+' in every mode';
if(i.d.w!==undefined)s+=' (was '+(i.d.w||'absent')+')';return s+'\\n'+(i.d.h||'')}
document.addEventListener('mouseover',e=>{const td=e.target.closest('td.s');
if(!td){tip.hidden=true;return}tip.textContent=brief(info(td));tip.hidden=false;
const r=td.getBoundingClientRect();tip.style.left=Math.min(r.left,innerWidth-580)+'px';
tip.style.top=(r.bottom+4)+'px'});
function show(td){const i=info(td);if(sel)sel.classList.remove('sel');sel=td;
td.classList.add('sel');
panel.querySelector('h2').textContent=i.t+' \\u00b7 '+i.row+': '+i.status;
panel.querySelector('.detail').textContent=i.d?i.d.d+(i.d.w!==undefined?
'\\nchanged since the baseline: was '+(i.d.w||'absent'):''):'passed in every mode';
const c=panel.querySelector('.cmd');c.textContent=i.d&&i.d.x?i.d.x:'';
panel.querySelector('.repro').hidden=!(i.d&&i.d.x);panel.hidden=false}
document.addEventListener('click',e=>{const td=e.target.closest('td.s');if(td){show(td);return}
const b=e.target.closest('tr.rule button');if(b){const g=b.closest('tbody');
const c=g.classList.toggle('closed');b.setAttribute('aria-expanded',String(!c));
b.firstChild.textContent=c?'\\u25b8 ':'\\u25be ';}});
document.addEventListener('keydown',e=>{if(e.key==='Enter'&&e.target.matches('td.s'))show(e.target);
if(e.key==='Escape'){panel.hidden=true;tip.hidden=true}});
panel.querySelector('.close').onclick=()=>{panel.hidden=true};
panel.querySelector('.copy').onclick=()=>{navigator.clipboard&&
navigator.clipboard.writeText(panel.querySelector('.cmd').textContent)};
document.getElementById('diff').onchange=e=>document.body.classList.toggle('diff',e.target.checked);
function all(c){for(const g of document.querySelectorAll('#matrix tbody')){
g.classList.toggle('closed',c);const b=g.querySelector('tr.rule button');
b.setAttribute('aria-expanded',String(!c));b.firstChild.textContent=c?'\\u25b8 ':'\\u25be '}}
document.getElementById('collapse').onclick=()=>all(true);
document.getElementById('expand').onclick=()=>all(false);})();
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element (no `<` can close it)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _score_cell(scores: Mapping[str, int] | None) -> str:
    if not scores:
        return f'<td class="none">{DASH}</td>'
    kind = "full" if scores["failed"] == 0 else "part"
    return f'<td class="{kind}">{_e(score(scores))}</td>'


def _scores_table(data: Mapping[str, Any]) -> list[str]:
    targets = data["targets"]
    out = ['<table id="scores"><thead><tr><th>rule</th>']
    out += [f'<th title="{_e(t["target"])}">{_e(t["label"])}</th>' for t in targets]
    out.append("</tr></thead><tbody>")
    for rule in data["rules"]:
        tag = rule["tag"]
        name = f"{tag} {rule['title']}" if tag != "none" else rule["title"]
        out.append(f'<tr><th scope="row" style="text-align:left">{_e(name)}</th>')
        out += [_score_cell(t["rules"].get(tag)) for t in targets]
        out.append("</tr>")
    for name, title in CLASS_ROWS:
        if any(t.get("classes", {}).get(name, {}).get("cases") for t in targets):
            out.append(f'<tr><th scope="row" style="text-align:left">{_e(title)}</th>')
            for t in targets:
                totals = t.get("classes", {}).get(name)
                kind = (
                    "none"
                    if not totals or not totals.get("cases")
                    else ("full" if totals["failed"] == 0 else "part")
                )
                out.append(f'<td class="{kind}">{_e(class_score(totals))}</td>')
            out.append("</tr>")
    out.append('<tr class="total"><th scope="row" style="text-align:left">all cases</th>')
    for t in targets:
        cases = t["cases"]
        full = cases["conforming"] == cases["total"] and cases["total"] > 0
        out.append(
            f'<td class="{"full" if full else "part"}">{cases["conforming"]}/{cases["total"]}</td>'
        )
    out.append('</tr><tr><th scope="row" style="text-align:left">runs passed</th>')
    for t in targets:
        totals = t["totals"]
        out.append(f"<td>{totals['passed']}/{totals['runs']}</td>")
    out.append("</tr>")
    for point in OUTCOMES:
        if any(t["choices"].get(point) for t in targets):
            out.append(f'<tr><th scope="row" style="text-align:left">{point}: outcome taken</th>')
            out += [f"<td>{_e(chosen(t['choices'].get(point)))}</td>" for t in targets]
            out.append("</tr>")
    out.append('<tr><th scope="row" style="text-align:left">verdict</th>')
    for t in targets:
        if t["error"] is not None:
            out.append(f'<td class="bad" title="{_e(t["error"])}">did not run</td>')
            continue
        xfail = f' <small title="{_e(t["xfail"])}">with --xfail</small>' if t["xfail"] else ""
        mark = "✓" if t["ok"] else "✗"
        out.append(
            f'<td class="{"ok" if t["ok"] else "bad"}">{mark} {_e(t["verdict"])}{xfail}</td>'
        )
    out.append("</tr></tbody></table>")
    said = [t for t in targets if t.get("in_words")]
    if said:
        out.append('<ul id="words">')
        out += [f"<li><b>{_e(t['label'])}</b> {_e(t['in_words'])}.</li>" for t in said]
        out.append("</ul>")
    return out


def _problems_view(targets: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per target, its distinct problems: the title, how many cases and runs, and the bug report
    with the command that reproduces it, folded."""
    out = ['<section id="problems"><h2>Distinct problems</h2>']
    for t in targets:
        problems = t.get("problems") or []
        out.append(f"<h3>{_e(t['label'])}: {len(problems)} problem(s)</h3>")
        if not problems:
            continue
        heading: object = object()
        for n, problem in enumerate(problems, start=1):
            category = problem.get("category")
            if category != heading:
                if n > 1:
                    out.append("</ol>")
                heading = category
                title = CATEGORY_TITLES.get(str(category))
                if title is not None:
                    out.append(f"<h4>on {_e(title)}</h4>")
                out.append(f'<ol start="{n}">')
            rule = f" [{problem['rule']}]" if problem.get("rule") else ""
            out.append(
                f"<li><details><summary>{_e(problem['title'])}{_e(rule)}: "
                f"{len(problem['cases'])} case(s), {problem['runs']} run(s) in "
                f"{_e(', '.join(problem['modes']))}</summary>"
                f'<pre class="cmd">{_e(problem["command"])}</pre>'
                f'<pre class="detail">{_e(problem["report"])}</pre></details></li>'
            )
        out.append("</ol>")
    out.append("</section>")
    return out


def _cell_html(cell: Mapping[str, Any], key: int | None, modes: int) -> str:
    css, symbol, _ = STATUS_LOOK.get(cell["status"], STATUS_LOOK[NOT_RUN])
    bad = sum(status != PASSED for status in cell["modes"].values())
    extra = f" <small>{bad}/{modes}</small>" if 0 < bad < modes else ""
    classes = f"s {css}" + (" chg" if "changed" in cell else "")
    attrs = f' data-s="{_e(cell["status"])}"'
    if key is not None:
        attrs += f' data-k="{key}" tabindex="0"'
    return f'<td class="{classes}"{attrs}>{symbol}{extra}</td>'


def matrix_page(data: Mapping[str, Any]) -> str:
    """The whole page, as text."""
    targets = data["targets"]
    modes = len(data["modes"])
    details: list[dict[str, Any]] = []
    rows_html: dict[str, str] = {}
    for row in data["cases"]:
        cells = []
        for cell in row["cells"]:
            key = None
            if cell["status"] != PASSED or "changed" in cell:
                key = len(details)
                first = cell.get("first") or {}
                item = {"h": first.get("headline", ""), "d": first.get("detail", cell["status"])}
                if first.get("command"):
                    item["x"] = first["command"]
                if "changed" in cell:
                    item["w"] = cell["changed"]["was"]
                details.append(item)
            cells.append(_cell_html(cell, key, modes))
        allpass = all(c["status"] == PASSED for c in row["cells"])
        rows_html[row["case"]] = (
            f'<tr{" class=allpass" if allpass else ""}><th class="case" scope="row">'
            f"{_e(row['case'])}</th>{''.join(cells)}</tr>"
        )
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        "<title>conform compatibility matrix</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>conform compatibility matrix</h1>",
        f'<p class="meta">{len(data["cases"])} cases &times; {modes} modes '
        f"({_e(', '.join(data['modes']))}), seed {_e(data['seed'])}; conform "
        f"{_e(data['conform_version'])}, {_e(data['generated'])}</p>",
    ]
    if data.get("partial"):
        out.append(
            '<p class="meta bad"><b>Partial:</b> the results of '
            f"{_e(', '.join(data['partial']))} are not the whole run asked for "
            "(interrupted, stopped, or did not run); their scores count only what ran.</p>"
        )
    if data.get("baseline"):
        base = data["baseline"]
        out.append(
            f'<p class="meta"><b>{base["changed"]}</b> cell(s) changed since '
            f"{_e(base['path'])} (marked Δ)</p>"
        )
    legend = "".join(
        f'<span class="s {css}">{symbol}</span>{_e(word)}'
        for css, symbol, word in STATUS_LOOK.values()
    )
    out.append(
        f'<p class="legend">{legend}<span class="s p">✓ <small>2/7</small></span>'
        "a count: the modes that did not pass</p>"
    )
    out += _scores_table(data)
    out.append(
        '<div class="tools"><button id="collapse">collapse all</button>'
        '<button id="expand">expand all</button><label><input type="checkbox" id="diff"> '
        "only cases where some target does not pass</label> Hover over a cell for its first "
        "mismatch; click it for the details and the command that reproduces it.</div>"
    )
    out.append('<table id="matrix"><thead><tr><th>case</th>')
    out += [
        f'<th title="{_e(t["target"])}">{_e(t["label"])}<small>{_e(t["target"])}</small></th>'
        for t in targets
    ]
    out.append("</tr></thead>")
    for rule in data["rules"]:
        tag = rule["tag"]
        rows = [rows_html[row["case"]] for row in data["cases"] if tag in (row["pins"] or ["none"])]
        name = f"{tag} {rule['title']}" if tag != "none" else rule["title"]
        scores = "".join(f"<td>{_e(score(t['rules'].get(tag)))}</td>" for t in targets)
        out.append(
            f'<tbody data-rule="{_e(tag)}"><tr class="rule"><th>'
            f'<button aria-expanded="true"><span>▾ </span>{_e(name)}</button> '
            f"<small>({len(rows)} case{'s' if len(rows) != 1 else ''})</small></th>{scores}</tr>"
        )
        out += rows
        out.append("</tbody>")
    out.append("</table>")
    out += _problems_view(targets)
    out.append('<div id="tip" role="tooltip" hidden></div>')
    out.append(
        '<aside id="panel" hidden><button class="close">close ✕</button><h2></h2>'
        '<pre class="detail"></pre><div class="repro"><b>reproduce:</b> '
        '<button class="copy">copy</button><pre class="cmd"></pre></div></aside>'
    )
    out.append(f'<script type="application/json" id="cells">{_script_json(details)}</script>')
    labels = [t["label"] for t in targets]
    out.append(f'<script type="application/json" id="labels">{_script_json(labels)}</script>')
    out.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(out) + "\n"
