/* The page's script, charts: inline SVG bar charts built element by element (no library, no canvas).

   Each bar segment carries a `<title>` (its value and count on hover) and each row a text note, so the
   numbers are readable without hovering. */
function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + '…' : text; }

// rows: [{label, segments: [{value, cls, title}], total?, note}]
function barChart(rows, label, opts) {
  const o = Object.assign({labelWidth: 240, barWidth: 360, noteWidth: 380, row: 24}, opts || {});
  const svg = s('svg', {class: 'chart', width: o.labelWidth + o.barWidth + o.noteWidth, height: rows.length * o.row + 6,
    role: 'img', 'aria-label': label});
  rows.forEach((r, i) => {
    const y = i * o.row + 3, bh = o.row - 8;
    svg.append(s('text', {x: 0, y: y + bh - 3}, clip(r.label, Math.floor(o.labelWidth / 6.8)), s('title', null, r.label)));
    svg.append(s('rect', {class: 'track', x: o.labelWidth, y: y, width: o.barWidth, height: bh}));
    const total = r.total || r.segments.reduce((a, g) => a + g.value, 0);
    let x = o.labelWidth;
    for (const g of r.segments) {
      if (!g.value || !total) continue;
      const w = o.barWidth * g.value / total;
      svg.append(s('rect', {class: g.cls, x: x.toFixed(2), y: y, width: Math.max(w, 0.8).toFixed(2), height: bh}, s('title', null, g.title)));
      x += w;
    }
    svg.append(s('text', {x: o.labelWidth + o.barWidth + 8, y: y + bh - 3}, clip(r.note || '', 60), s('title', null, r.note || '')));
  });
  return svg;
}

function verdictChart(counts) {
  const n = counts.passed + counts.judged + counts.failed + counts.auto_failed + counts.incomplete;
  const seg = (k, cls) => ({value: counts[k], cls: cls, title: STATUS_LABEL[k] + ': ' + counts[k] + ' of ' + n + ' tasks'});
  return barChart([{label: 'verdicts', segments: [seg('passed', 'f-pass'), seg('judged', 'f-judged'), seg('failed', 'f-fail'), seg('auto_failed', 'f-auto'), seg('incomplete', 'f-inc')],
    note: Object.keys(STATUS_LABEL).map(k => STATUS_LABEL[k] + ' ' + counts[k]).join(' · ')}], 'tasks by verdict');
}

function pairChart(run) {
  return barChart(run.pairs.map(p => {
    const n = p.passed + p.judged + p.failed + p.incomplete;
    return {label: p.pair, segments: [
      {value: p.passed, cls: 'f-pass', title: p.passed + ' passed'},
      {value: p.judged, cls: 'f-judged', title: p.judged + ' judged (no pass rule)'},
      {value: p.failed, cls: 'f-fail', title: p.failed + ' failed (judged)'},
      {value: p.incomplete, cls: 'f-inc', title: p.incomplete + ' incomplete (not judged)'}],
      note: (p.passed + p.failed ? 'pass rate ' + fmt.pct(p.pass_rate) + ' (' + p.passed + ' of ' + (p.passed + p.failed) + ' complete), ' : p.judged ? 'no pass rule: ' + p.judged + ' judged, ' : '') + p.incomplete + ' incomplete of ' + n};
  }), 'pass rate per answering model and judge', {labelWidth: 420});
}

function valueClass(kind, text, i) {
  if (kind === 'boolean' || kind === 'regex' || (kind === 'callable' && (text === 'true' || text === 'false'))) return text === 'true' ? 'f-pass' : 'f-fail';
  return 'v' + (i % 12);
}

function traitChart(run) {
  return barChart(run.traits.map(t => {
    const segs = t.values.map(([text, n], i) => ({value: n, cls: valueClass(t.kind, text, i), title: t.name + ' = ' + text + ': ' + n + ' task(s)'}));
    segs.push({value: t.unscored, cls: 'f-inc', title: t.name + ' unscored: ' + t.unscored});
    segs.push({value: t.auto_failed, cls: 'f-auto', title: t.name + ' auto-failed: ' + t.auto_failed});
    segs.push({value: t.skipped, cls: 'f-skip', title: t.name + ' skipped: ' + t.skipped});
    const shown = t.values.slice(0, 4).map(([text, n]) => text + ' ×' + n).join(', ') + (t.values.length > 4 ? ', …' : '');
    return {label: t.name + ' (' + t.kind + ')', segments: segs,
      note: (t.mean !== null && t.kind !== 'literal' ? 'mean ' + t.mean.toFixed(2) + '; ' : '') + shown};
  }), 'score distribution per trait');
}

function gapChart(run) {
  const rows = run.traits.filter(t => t.unscored || t.auto_failed);
  if (!rows.length) return h('p', {class: 'muted'}, 'Every trait was scored (none unscored or auto-failed).');
  const top = Math.max(...rows.map(t => t.unscored + t.auto_failed));
  return barChart(rows.map(t => ({label: t.name, total: top, segments: [
    {value: t.unscored, cls: 'f-inc', title: t.unscored + ' unscored'},
    {value: t.auto_failed, cls: 'f-auto', title: t.auto_failed + ' auto-failed'}],
    note: t.unscored + ' unscored · ' + t.auto_failed + ' auto-failed'})), 'unscored and auto-failed traits');
}

function renderOverview() {
  const box = byId('overview');
  const run = R.main;
  box.append(h('h2', null, 'Overview'));
  box.append(h('h3', null, 'Pass rate per answering model and judge'), pairChart(run));
  if (run.traits.length) {
    box.append(h('h3', null, 'Scores per trait'), h('p', {class: 'muted'}, 'Each bar is the trait\'s tasks: one segment per score or label (hover for counts); orange unscored, purple auto-failed, grey skipped.'), traitChart(run));
    box.append(h('h3', null, 'Unscored and auto-failed'), gapChart(run));
  }
}
