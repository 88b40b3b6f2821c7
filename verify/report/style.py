"""The page's stylesheet, inlined so the report opens from disk and from a mail attachment.

Excerpt marks nest (see :mod:`verify.report.highlight`), so each trait's colour is translucent:
text quoted for several traits shows darker, and the underline keeps the innermost trait's colour.
"""

from __future__ import annotations

__all__ = ["CSS"]

CSS = """
:root { --fg: #1d2430; --muted: #5d6677; --line: #d9dee7; --bg: #fff; --soft: #f4f6f9;
  --pass: #2e8b57; --judged: #2c7fb8; --fail: #c0392b; --auto: #8e44ad; --inc: #d68910; --skip: #aab2bf; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); }
header.page { padding: 14px 24px; border-bottom: 1px solid var(--line); background: var(--soft); }
header.page h1 { margin: 0; font-size: 20px; }
main { padding: 8px 24px 48px; max-width: 1400px; }
h2 { font-size: 17px; margin: 22px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
h4 { font-size: 14px; margin: 0 0 4px; }
.muted { color: var(--muted); }
.pre, pre { white-space: pre-wrap; word-break: break-word; }
pre { background: var(--soft); padding: 8px; border-radius: 4px; font-size: 12px; max-height: 420px; overflow: auto; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 6px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; word-break: break-word; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; }
.notes li { color: #7a4b00; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
.table-wrap th { position: sticky; top: 0; }
#tasks th { cursor: pointer; user-select: none; }
#tasks th[aria-sort="ascending"]::after { content: " \\25B2"; }
#tasks th[aria-sort="descending"]::after { content: " \\25BC"; }
#tasks tr.task, #flips tr.flip, #trait-flips tr.trait-flip { cursor: pointer; }
#tasks tr.task:hover, tr.flip:hover, tr.trait-flip:hover { background: #eef3fb; }
#tasks tr.task.selected { background: #dfe9f8; }
tr.off-page { display: none; }
.table-wrap { max-height: 60vh; overflow: auto; border: 1px solid var(--line); border-radius: 4px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.filters input { min-width: 280px; padding: 4px 6px; }
.filters select, .filters input, button { font: inherit; }
.filters select { max-width: 340px; }
.status { display: inline-block; padding: 0 6px; border-radius: 9px; color: #fff; font-size: 12px; white-space: nowrap; }
.s-passed { background: var(--pass); } .s-judged { background: var(--judged); } .s-failed { background: var(--fail); }
.s-auto_failed { background: var(--auto); } .s-incomplete { background: var(--inc); }
.s-missing { background: var(--skip); }
.up { color: var(--pass); } .down { color: var(--fail); }
.task-view { border: 1px solid var(--line); border-radius: 6px; padding: 4px 18px 16px; margin-top: 18px; }
.answer { white-space: pre-wrap; word-break: break-word; border-left: 3px solid var(--line); padding: 6px 12px;
  background: #fcfcfd; line-height: 1.9; }
.failure { border-left: 3px solid var(--fail); padding: 4px 10px; background: #fdf2f1; }
.trait { border-top: 1px solid var(--line); padding: 8px 0; }
.evidence li { margin: 3px 0; }
.evidence li.active { background: #fff3c4; }
.rejected li { color: #7d3a33; }
.reasoning { background: var(--soft); padding: 6px 10px; border-radius: 4px; white-space: pre-wrap; }
a.ref { font-weight: 600; text-decoration: none; }
.chip { display: inline-block; padding: 0 6px; margin: 0 4px 4px 0; border-radius: 3px; font-size: 12px; }
.run-switch button { margin-right: 6px; }
.run-switch button[aria-pressed="true"] { font-weight: 700; }
mark.excerpt { color: inherit; padding: 1px 0; border-radius: 2px; background: var(--k); border-bottom: 2px solid var(--kl); cursor: pointer; }
mark.excerpt[id]::before { content: attr(data-label); font-size: 9px; vertical-align: super; color: var(--muted);
  margin-right: 1px; }
mark.excerpt.active { outline: 2px solid #111; background: #ffe066; }
.k0 { --k: rgba(31,119,180,.22); --kl: #1f77b4; } .k1 { --k: rgba(255,127,14,.22); --kl: #ff7f0e; }
.k2 { --k: rgba(44,160,44,.22); --kl: #2ca02c; } .k3 { --k: rgba(214,39,40,.20); --kl: #d62728; }
.k4 { --k: rgba(148,103,189,.22); --kl: #9467bd; } .k5 { --k: rgba(140,86,75,.22); --kl: #8c564b; }
.k6 { --k: rgba(227,119,194,.22); --kl: #e377c2; } .k7 { --k: rgba(127,127,127,.22); --kl: #7f7f7f; }
.k8 { --k: rgba(188,189,34,.25); --kl: #bcbd22; } .k9 { --k: rgba(23,190,207,.22); --kl: #17becf; }
.chip.k0, .chip.k1, .chip.k2, .chip.k3, .chip.k4, .chip.k5, .chip.k6, .chip.k7, .chip.k8, .chip.k9 {
  background: var(--k); border-bottom: 2px solid var(--kl); }
svg.chart { display: block; margin: 6px 0 12px; font-size: 12px; }
svg.chart text { fill: var(--fg); }
svg.chart .track { fill: var(--soft); }
.f-pass { fill: var(--pass); } .f-judged { fill: var(--judged); } .f-fail { fill: var(--fail); } .f-auto { fill: var(--auto); }
.f-inc { fill: var(--inc); } .f-skip { fill: var(--skip); } .f-none { fill: #d5d9e0; }
.v0 { fill: #1f77b4; } .v1 { fill: #4e9bd1; } .v2 { fill: #7fb8e0; } .v3 { fill: #17becf; } .v4 { fill: #2ca02c; }
.v5 { fill: #98df8a; } .v6 { fill: #bcbd22; } .v7 { fill: #ff7f0e; } .v8 { fill: #ffbb78; } .v9 { fill: #9467bd; }
.v10 { fill: #c5b0d5; } .v11 { fill: #8c564b; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
#pager button { margin: 6px 6px 0 0; }
.transcript { border-left: 3px solid var(--line); padding: 2px 0 2px 10px; }
.transcript .block { white-space: pre-wrap; word-break: break-word; line-height: 1.9; margin: 4px 0; padding: 4px 8px;
  border-radius: 4px; background: #fcfcfd; border: 1px solid var(--line); }
.block[data-role="user"] { background: #f3f7fd; } .block[data-role="system"] { background: var(--soft); }
.block[data-kind="call"] { background: #fbf7ee; font-family: ui-monospace, monospace; font-size: 12px; }
.block[data-kind="result"] { background: #f1f8f3; } .block.error { border-color: var(--fail); }
.block-head { color: var(--muted); font-weight: 600; }
.rv { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; background: var(--soft); border: 1px solid var(--line); }
.rv-satisfied { color: var(--pass); } .rv-needs_revision, .rv-max_iterations_reached { color: var(--inc); }
.rv-failed, .rv-grader_error { color: var(--fail); }
.criteria { margin: 0; padding-left: 16px; } .criterion[data-passed="false"] { color: #7d3a33; }
"""
