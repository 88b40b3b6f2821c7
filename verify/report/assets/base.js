/* The page's script, first part: helpers, reading the embedded data, the run header and the comparison.

   Every piece of data reaches the page as a text node or an attribute value set with `setAttribute`
   (h() turns strings into text nodes), never parsed as HTML, so an answer holding markup
   shows as text. The only links built from data are search results' `http(s)` addresses. */
'use strict';
const SVGNS = 'http://www.w3.org/2000/svg';
const STATUS_LABEL = {passed: 'passed', judged: 'judged (no pass rule)', failed: 'failed', incomplete: 'incomplete', auto_failed: 'auto-failed'};
const STATUS_ORDER = {passed: 0, judged: 1, failed: 2, auto_failed: 3, incomplete: 4};
const R = {data: null, main: null, before: null, byId: new Map(), beforeById: new Map(), colours: new Map()};

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    e.setAttribute(k, v === true ? '' : String(v));
  }
}
function append(e, kids) {
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : String(kid));  // a string becomes a text node, never markup
  }
  return e;
}
function h(tag, attrs, ...kids) { const e = document.createElement(tag); setAttrs(e, attrs); return append(e, kids); }
function s(tag, attrs, ...kids) { const e = document.createElementNS(SVGNS, tag); setAttrs(e, attrs); return append(e, kids); }
function byId(id) { return document.getElementById(id); }

const fmt = {
  pct: x => (x === null || x === undefined) ? '—' : (100 * x).toFixed(1) + '%',
  num: x => (x === null || x === undefined) ? '—' : Number(x).toLocaleString('en-US', {maximumFractionDigits: 3}),
  secs: x => (x === null || x === undefined) ? '—' : x < 120 ? x.toFixed(2) + ' s' : (x / 60).toFixed(1) + ' min',
  money: x => (x === null || x === undefined) ? '—' : '$' + Number(x).toFixed(4),
  value: v => (v === null || v === undefined) ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v),
};
function badge(status) {
  const known = Object.prototype.hasOwnProperty.call(STATUS_LABEL, status);
  return h('span', {class: 'status s-' + (known ? status : 'missing')}, known ? STATUS_LABEL[status] : (status || 'not in this run'));
}
function details(summary, ...kids) { return h('details', null, h('summary', null, summary), ...kids); }
function facts(pairs) {
  const dl = h('dl', {class: 'facts'});
  for (const [k, v] of pairs) {
    if (v === null || v === undefined || v === '') continue;
    dl.append(h('dt', null, k), h('dd', null, v instanceof Node ? v : fmt.value(v)));
  }
  return dl;
}
function colourOf(name) {
  if (!R.colours.has(name)) R.colours.set(name, R.colours.size % 10);
  return 'k' + R.colours.get(name);
}
function chip(name, text) { return h('span', {class: 'chip ' + colourOf(name)}, text === undefined ? name : text); }
function card(label, value, title) { return h('div', {class: 'card', title: title || null}, h('div', {class: 'v'}, value), h('div', {class: 'k'}, label)); }
function statusCounts(tasks) {
  const c = {passed: 0, judged: 0, failed: 0, auto_failed: 0, incomplete: 0};
  for (const t of tasks) c[t.status] = (c[t.status] || 0) + 1;
  return c;
}
function pair(t) { return t.answering + ' / ' + t.judge; }

async function loadData() {
  const raw = JSON.parse(byId('report-data').textContent);
  if (typeof raw.gzip !== 'string') return raw;
  // a large run is embedded gzipped (base64): a few thousand tasks stay small enough to mail
  const bin = atob(raw.gzip);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(stream).text());
}

function modelsOf(cfg, role) {
  return (cfg[role] || []).map(m => (m.interface || m.model_provider || '?') + ':' + m.model_name +
    (m.id && m.id !== m.model_name ? ' (' + m.id + ')' : '') +
    (m.temperature !== null && m.temperature !== undefined ? ', temperature ' + m.temperature : '')).join('; ');
}

function runSummary(run) {
  const hd = run.header || {}, f = run.figures, cfg = hd.config || {};
  const counts = statusCounts(run.tasks);
  const box = h('div', {class: 'run-summary'});
  box.append(h('h2', null, 'Run: ', run.label));
  box.append(facts([
    ['results file', run.path], ['benchmark', hd.benchmark], ['run name', hd.run_name],
    ['verify version', hd.verify_version], ['evaluation mode', hd.evaluation_mode || cfg.evaluation_mode],
    ['answering models', modelsOf(cfg, 'answering_models') || [...new Set(run.tasks.map(t => t.answering))].join('; ')],
    ['judges', modelsOf(cfg, 'parsing_models') || [...new Set(run.tasks.map(t => t.judge))].join('; ')],
    ['plan', (hd.plan || []).join(' → ')], ['rubric deep judgment', cfg.deep_judgment_rubric_mode],
    ['template deep judgment', cfg.deep_judgment_mode], ['exported', hd.export_timestamp],
  ]));
  const cost = f.cost_usd === null ? 'no price table' : fmt.money(f.cost_usd);
  box.append(h('div', {class: 'cards'},
    card('coverage', fmt.pct(f.coverage), f.coverage_line), f.pass_rule === false ? card('pass rate', 'no pass rule', 'scores only: no template verification, no rubric verdict') : card('pass rate (complete tasks)', fmt.pct(f.pass_rate)),
    card('tasks', fmt.num(f.tasks)), card('passed', fmt.num(counts.passed)), ...(counts.judged ? [card('judged (no pass rule)', fmt.num(counts.judged))] : []), card('failed', fmt.num(counts.failed)),
    card('auto-failed', fmt.num(counts.auto_failed)), card('incomplete', fmt.num(counts.incomplete)),
    card('with execution errors', fmt.num(f.with_errors)), card('tokens', fmt.num(f.tokens)),
    card('model calls', fmt.num(f.model_calls), fmt.num(f.cached_calls) + ' from cache, ' + fmt.num(f.http_attempts) + ' HTTP attempts'),
    card('cost', cost, f.unpriced_models.length ? 'no price for ' + f.unpriced_models.join(', ') : null),
    card('time', fmt.secs(f.duration), 'summed task time ' + fmt.secs(f.task_time))));
  box.append(h('p', null, 'coverage: ', f.coverage_line));
  box.append(verdictChart(counts));
  const dj = f.deep_judgment;
  if (dj.traits) {
    box.append(h('p', null, 'deep judgment: ' + fmt.num(dj.traits) + ' trait evaluations, ' + fmt.num(dj.excerpts) +
      ' excerpts validated, ' + fmt.num(dj.rejected) + ' rejected, ' + fmt.num(dj.retries) + ' retries, ' +
      fmt.num(dj.without_evidence) + ' without valid evidence, ' + fmt.num(dj.risky) + ' with medium/high hallucination risk'));
  }
  if (run.revision) box.append(revisionSummary(run.revision));
  const cats = Object.entries(f.failure_categories);
  if (cats.length) box.append(h('p', null, 'failures: ', cats.map(([c, n]) => c + ' ' + n).join(', ')));
  if (hd.gates) box.append(h('h3', null, 'Gates'), h('pre', null, JSON.stringify(hd.gates, null, 2)));
  const notes = [...run.notes, ...run.task_warnings.map(([m, n]) => m + ' (' + n + ' task' + (n === 1 ? '' : 's') + ')'),
    ...run.errors.map(([m, n]) => 'error: ' + m + ' (' + n + ' task' + (n === 1 ? '' : 's') + ')')];
  if (notes.length) box.append(h('h3', null, 'Warnings'), h('ul', {class: 'notes'}, notes.map(n => h('li', null, n))));
  box.append(details('effective config', h('pre', null, JSON.stringify(cfg, null, 2))));
  if (hd.identity) box.append(details('run identity', h('pre', null, JSON.stringify(hd.identity, null, 2))));
  return box;
}

function renderRuns() {
  const box = byId('run');
  const runs = R.data.runs;
  if (R.before) {
    box.append(h('p', null, 'Comparing ', h('b', null, runs[0].label), ' (earlier) with ', h('b', null, runs[1].label),
      ' (later); the charts and the table show the later run, each task view can switch between them.'));
  }
  box.append(runSummary(R.main));
  if (R.before) box.append(details('earlier run: ' + R.before.label, runSummary(R.before)));
}

function changeText(a, b, kind) {
  if (typeof a !== 'number' || typeof b !== 'number') return a === b ? '' : 'changed';
  const d = b - a;
  if (!d) return '0';
  const sign = d > 0 ? '+' : '−', v = Math.abs(d);
  if (kind === 'rate') return sign + (100 * v).toFixed(1) + ' pts';
  if (kind === 'money') return sign + '$' + v.toFixed(4);
  if (kind === 'seconds' || kind === 'score') return sign + v.toFixed(3);
  return sign + fmt.num(v);
}
function figureValue(v, kind) {
  if (kind === 'rate') return fmt.pct(v);
  if (kind === 'money') return fmt.money(v);
  if (kind === 'seconds') return fmt.secs(v);
  return typeof v === 'number' ? fmt.num(v) : fmt.value(v);
}
function sideCell(side) { return [badge(side.status), side.category ? ' ' + side.category : '']; }
function taskCell(f) { return h('a', {href: '#task-' + f.id}, f.question + (f.replicate !== null && f.replicate !== undefined ? ' #' + f.replicate : '')); }

function renderCompare() {
  const c = R.data.compare;
  if (!c) return;
  const box = byId('compare');
  box.hidden = false;
  box.append(h('h2', null, 'What changed'), h('p', null, fmt.num(c.matched) + ' tasks in both runs; ' + c.flips.length +
    ' flipped status; ' + c.trait_flips.length + ' trait outcomes changed; ' + c.only.before.length + ' only in the earlier run, ' +
    c.only.after.length + ' only in the later run.'));
  const figureTable = (rows, id) => h('table', {id: id}, h('thead', null, h('tr', null, h('th', null, 'figure'), h('th', null, R.before.label),
    h('th', null, R.main.label), h('th', null, 'change'))), h('tbody', null, rows.map(([name, a, b, kind]) =>
    h('tr', null, h('td', null, name), h('td', null, figureValue(a, kind)), h('td', null, figureValue(b, kind)), h('td', null, changeText(a, b, kind))))));
  // the run's own figures in view; per model pair, per trait and deep judgment folded
  box.append(figureTable(c.figures.filter(r => !r[0].includes(':')), 'figure-changes'));
  box.append(details('per model pair, per trait and deep judgment', figureTable(c.figures.filter(r => r[0].includes(':')), 'figure-changes-detail')));
  box.append(h('h3', null, 'Tasks that flipped'));
  if (!c.flips.length) box.append(h('p', {class: 'muted'}, 'No task changed status.'));
  box.append(h('table', {id: 'flips'}, h('thead', null, h('tr', null, ['task', 'answering model', 'judge', 'earlier', 'later', 'later failure'].map(x => h('th', null, x)))),
    h('tbody', null, c.flips.map(f => h('tr', {class: 'flip', 'data-task': f.id, 'data-before': f.before.status, 'data-after': f.after.status},
      h('td', null, taskCell(f)), h('td', null, f.answering), h('td', null, f.judge), h('td', null, sideCell(f.before)),
      h('td', null, sideCell(f.after)), h('td', null, f.after.reason || ''))))));
  box.append(h('h3', null, 'Traits that changed'));
  const counts = Object.entries(c.trait_flip_counts);
  box.append(counts.length ? h('p', null, counts.map(([t, n]) => [chip(t), n + ' task' + (n === 1 ? '' : 's') + ' '])) : h('p', {class: 'muted'}, 'No trait outcome changed.'));
  if (c.trait_flips.length) {
    box.append(h('table', {id: 'trait-flips'}, h('thead', null, h('tr', null, ['task', 'answering model', 'judge', 'trait', 'earlier', 'later'].map(x => h('th', null, x)))),
      h('tbody', null, c.trait_flips.map(f => h('tr', {class: 'trait-flip', 'data-task': f.id, 'data-trait': f.trait},
        h('td', null, taskCell(f)), h('td', null, f.answering), h('td', null, f.judge), h('td', null, f.trait), h('td', null, f.before), h('td', null, f.after))))));
  }
  for (const [side, label] of [['before', 'only in the earlier run'], ['after', 'only in the later run']]) {
    const only = c.only[side];
    if (only.length) box.append(details(label + ' (' + only.length + ')', h('ul', null, only.map(f => h('li', null, taskCell(f), ' ', f.answering, ' / ', f.judge, ' ', badge(f.status))))));
  }
}

function activate(id) {
  const target = byId(id);
  if (!target) return;
  for (const m of document.querySelectorAll('.active')) m.classList.remove('active');
  target.classList.add('active');
  for (const m of document.querySelectorAll('mark.excerpt[data-cont="' + CSS.escape(id) + '"]')) m.classList.add('active');
  target.scrollIntoView({block: 'center'});
}

function onClick(ev) {
  const el = ev.target instanceof Element ? ev.target : null;
  if (!el) return;
  const ref = el.closest('a.ref');
  if (ref) { ev.preventDefault(); activate(ref.getAttribute('href').slice(1)); return; }
  const mark = el.closest('mark.excerpt');
  if (mark) {
    const id = mark.id || mark.dataset.cont;
    const item = byId(id.replace(/-E(\d+)$/, '-L$1'));
    if (item) { activate(id); item.classList.add('active'); }
    return;
  }
  const sw = el.closest('button[data-switch]');
  if (sw) { openTask(sw.dataset.task, false, sw.dataset.switch); return; }
  const row = el.closest('tr.task, tr.flip, tr.trait-flip');
  if (row) { ev.preventDefault(); openTask(row.dataset.task, true); }
}

function init(data) {
  R.data = data;
  R.main = data.runs[data.runs.length - 1];
  R.before = data.runs.length > 1 ? data.runs[0] : null;
  for (const t of R.main.tasks) R.byId.set(t.id, t);
  if (R.before) for (const t of R.before.tasks) R.beforeById.set(t.id, t);
  for (const run of data.runs) for (const t of run.traits) colourOf(t.name);
  renderRuns();
  renderCompare();
  renderOverview();
  setupTable();
  document.addEventListener('click', onClick);
  byId('loading').remove();
  const m = /^#task-(t[0-9a-f]+(?:-[0-9]+)?)$/.exec(location.hash);
  if (m && (R.byId.has(m[1]) || R.beforeById.has(m[1]))) openTask(m[1], true);
  document.body.dataset.ready = '1';
}
