/* The page's script, the task view: built when a task is opened, from that task's record only.

   The answer is rendered from its mark tree (verify.report.highlight): each excerpt's first
   piece is `<mark class="excerpt" id="<task>-E<n>">`, later pieces of a split excerpt carry
   `data-cont="<task>-E<n>"`. References in the judge's reasoning are `<a class="ref">` links to
   those ids; a reference to an excerpt that could not be located in the answer is plain text. */
function renderTree(nodes, t, parent) {
  for (const n of nodes) {
    if (typeof n === 'string') { parent.append(n); continue; }
    const e = t.excerpts[n.n - 1];
    const what = (e.kind === 'attribute' ? 'template attribute ' : 'trait ') + e.trait;
    const title = what + ' · E' + n.n + ' · confidence ' + e.confidence + ' · similarity ' + e.similarity +
      ' · ' + e.method + (e.risk ? ' · hallucination risk ' + e.risk : '');
    const mark = h('mark', {class: 'excerpt ' + colourOf(e.trait), 'data-trait': e.trait, 'data-kind': e.kind, title: title});
    if (e.block) { mark.dataset.block = e.block; mark.title += ' · block B' + e.block; }
    if (n.id) { mark.id = t.id + '-E' + n.n; mark.dataset.label = 'E' + n.n + (e.block ? '·B' + e.block : ''); } else mark.dataset.cont = t.id + '-E' + n.n;
    renderTree(n.c, t, mark);
    parent.append(mark);
  }
}

function refLink(t, n) {
  const e = t.excerpts[n - 1];
  if (!e || !e.located) return h('span', {class: 'muted', title: 'not located in the answer'}, '[E' + n + ']');
  return h('a', {class: 'ref', href: '#' + t.id + '-E' + n, title: e.trait + ': ' + e.text}, '[E' + n + ']');
}

function safeUrl(url) { return /^https?:\/\//i.test(url) ? url : null; }

function evidenceList(t, numbers) {
  return h('ul', {class: 'evidence'}, numbers.map(n => {
    const e = t.excerpts[n - 1];
    const meta = ['confidence ' + e.confidence, 'similarity ' + e.similarity, e.method];
    if (e.spans) meta.push('quoted in ' + e.spans.length + ' parts');
    if (e.in === 'trace') meta.push(e.block ? 'full trace, block B' + e.block : 'full trace');
    if (!e.located) meta.push('offsets ' + e.start + '–' + e.end + ' not located in the ' + (e.in === 'trace' ? 'transcript' : 'answer'));
    const li = h('li', {id: t.id + '-L' + n}, refLink(t, n), ' “', e.text, '” ', h('span', {class: 'muted'}, '(' + meta.join(' · ') + ')'));
    if (e.risk) li.append(h('div', null, 'hallucination risk: ', h('b', null, e.risk), e.justification ? ' — ' + e.justification : ''));
    if (e.search) {
      li.append(details('search results (' + e.search.length + ')', h('ul', null, e.search.map(r => {
        const url = safeUrl(r.url);
        return h('li', null, h('b', null, r.title || 'untitled'), ' ',
          url ? h('a', {href: url, rel: 'noopener noreferrer', target: '_blank'}, r.url) : h('span', {class: 'muted'}, r.url), h('div', null, r.content));
      }))));
    }
    return li;
  }));
}

function reasoningBlock(t, parts, numbers) {
  const box = h('div');
  let refs = 0;
  if (parts) {
    const r = h('div', {class: 'reasoning'});
    for (const part of parts) {
      if (typeof part === 'number') { r.append(refLink(t, part)); refs++; } else r.append(part);
    }
    box.append(h('div', null, h('b', null, 'reasoning')), r);
  }
  if (!refs && numbers.length) box.append(h('p', null, 'evidence: ', numbers.map(n => [refLink(t, n), ' '])));
  return box;
}

function rejectedList(items) {
  if (!items || !items.length) return null;
  return h('div', null, h('b', null, 'rejected quotes'), h('ul', {class: 'rejected'}, items.map(r =>
    h('li', null, '“', r.text, '” — ', r.reason || 'not found in the answer', h('span', {class: 'muted'},
      ' (similarity ' + r.similarity_score + ', attempt ' + r.attempt + ')')))));
}

const EVIDENCE_TEXT = {excerpts: 'validated excerpts', absence: 'evidence of absence: the judge found nothing in the answer bearing on this trait',
  failed: 'no excerpt could be validated'};

function deepBlock(t, d) {
  const box = h('div', {class: 'deep'});
  const numbers = d.excerpts || [];
  const bits = [EVIDENCE_TEXT[d.evidence], d.excerpt_retry_count && d.excerpt_retry_count + ' retries',
    d.model_calls && d.model_calls + ' model calls', d.without_valid_excerpts && 'no valid excerpts'].filter(Boolean);
  box.append(h('p', {class: 'muted'}, 'deep judgment' + (bits.length ? ': ' + bits.join(' · ') : '')));
  if (numbers.length) box.append(evidenceList(t, numbers));
  box.append(rejectedList(d.rejected_excerpts) || '');
  box.append(reasoningBlock(t, d.reasoning, numbers));
  if (d.risk) box.append(h('p', null, 'hallucination risk (trait): ', h('b', null, d.risk.overall_risk),
    d.risk.per_excerpt_risks.length ? ' — per excerpt: ' + d.risk.per_excerpt_risks.join(', ') : '', d.risk.note ? ' (' + d.risk.note + ')' : ''));
  if (d.error) box.append(h('p', null, 'error: ', d.error));
  const o = d.settings;
  if (o) box.append(h('p', {class: 'muted'}, 'settings (' + (o.source || 'default') + '): ' + (o.excerpt_enabled === false ? 'no excerpts' :
    'up to ' + o.max_excerpts + ' excerpts, fuzzy match ≥ ' + o.fuzzy_match_threshold + ', ' + o.excerpt_retry_attempts + ' retries') +
    ', search ' + (o.search_enabled ? 'on' : 'off')));
  return box;
}

function scoreText(tr) {
  if (tr.label !== undefined && tr.label !== null) return tr.label + ' (' + fmt.value(tr.score) + ')';
  return fmt.value(tr.score);
}

function traitBlock(t, tr) {
  const box = h('div', {class: 'trait', 'data-trait': tr.name});
  const status = (tr.status || 'not evaluated').replace('_', '-');
  box.append(h('h4', null, chip(tr.name), ' ', h('span', {class: 'muted'}, tr.kind + (tr.provenance ? ', ' + tr.provenance : '')),
    ' — ', status, tr.status === 'scored' ? ': ' + scoreText(tr) : ''));
  if (tr.label_read_as) box.append(h('p', null, 'label as the judge wrote it: ', tr.label_read_as));
  if (tr.reason) box.append(h('p', null, h('b', null, tr.status === 'auto_failed' ? 'auto-failed: ' : 'why: '), tr.reason));
  const why = tr.error_category || tr.unscored_category;
  if (why) box.append(h('p', null, 'not judged because: ', h('b', null, why)));
  if (tr.raw_reply !== undefined && tr.raw_reply !== null) box.append(details('raw reply', h('pre', null, tr.raw_reply)));
  if (tr.fields) box.append(facts(Object.entries(tr.fields)));
  if (tr.metrics) box.append(facts(Object.entries(tr.metrics)));
  if (tr.confusion) box.append(facts(Object.entries(tr.confusion).map(([k, v]) => [k, v.join('; ') || '—'])));
  if (tr.deep) box.append(deepBlock(t, tr.deep));
  return box;
}

function checkBlock(label, tp, prefix, extra) {
  if (!tp[prefix + '_check_performed']) return null;
  return h('div', null, h('b', null, label), facts([['detected', tp[prefix + '_detected']], ['override applied', tp[prefix + '_override_applied']],
    ['reasoning', tp[prefix + '_reasoning']], ...(extra || [])]));
}

function templateBlock(t) {
  const tp = t.template;
  // rubric_only: the section only carries the answer, which is shown above
  if (!tp || !(tp.template_verification_performed || tp.parsed_gt_response || tp.parsed_llm_response ||
    tp.abstention_check_performed || tp.sufficiency_check_performed || t.evaluation_mode !== 'rubric_only')) return null;
  const box = h('div', null, h('h3', null, 'Template'));
  const verdict = tp.verify_result === true ? 'true' : tp.verify_result === false ? 'false' : tp.template_verification_performed ? '—' : 'did not run';
  box.append(facts([['verify()', verdict], ['granular score', tp.verify_granular_result], ['composition', tp.composition_strategy],
    ['verify() error', tp.field_verification_error]]));
  const parsed = tp.parsed_llm_response || {}, expected = tp.parsed_gt_response || {};
  const results = tp.field_results || {}, scores = tp.field_scores || {};
  const fields = [...new Set([...Object.keys(parsed), ...Object.keys(expected), ...Object.keys(results)])];
  if (fields.length) {
    const checked = tp.field_results ? 1 : 0, scored = tp.field_scores ? 1 : 0;  // VerifiedField templates only
    const head = ['field', 'parsed from the answer', 'expected', checked && 'check', scored && 'score'].filter(Boolean);
    box.append(h('table', {class: 'fields'}, h('thead', null, h('tr', null, head.map(x => h('th', null, x)))),
      h('tbody', null, fields.map(f => h('tr', null, h('td', null, f), h('td', null, fmt.value(parsed[f])), h('td', null, fmt.value(expected[f])),
        checked ? h('td', null, f in results ? fmt.value(results[f]) : '') : null, scored ? h('td', null, f in scores ? fmt.value(scores[f]) : '') : null)))));
  }
  if (tp.regex_validations_performed) {
    box.append(h('div', null, h('b', null, 'regex checks'), facts(Object.entries(tp.regex_validation_results || {}))));
    if (tp.regex_validation_details) box.append(details('regex details', h('pre', null, JSON.stringify(tp.regex_validation_details, null, 2))));
  }
  box.append(checkBlock('abstention check', tp, 'abstention') || '', checkBlock('sufficiency check', tp, 'sufficiency') || '');
  if (tp.embedding_check_performed) box.append(h('div', null, h('b', null, 'embedding check'), facts([['similarity', tp.embedding_similarity_score],
    ['override applied', tp.embedding_override_applied], ['model', tp.embedding_model_used]])));
  return box;
}

function templateDeepBlock(t) {
  const d = t.template_deep;
  if (!d) return null;
  const box = h('div', null, h('h3', null, 'Template deep judgment (' + d.deep_judgment_mode + ')'));
  const attrs = [...new Set([...Object.keys(d.excerpts), ...Object.keys(d.reasoning), ...Object.keys(d.rejected_excerpts)])];
  const risks = d.hallucination_risk_assessment || {};
  for (const a of attrs) {
    const numbers = d.excerpts[a] || [];
    const part = h('div', {class: 'trait', 'data-attribute': a}, h('h4', null, chip(a), ' ', h('span', {class: 'muted'}, 'template attribute')));
    if (numbers.length) part.append(evidenceList(t, numbers));
    part.append(rejectedList(d.rejected_excerpts[a]) || '', reasoningBlock(t, d.reasoning[a], numbers));
    if (risks[a]) part.append(h('p', null, 'hallucination risk: ', h('b', null, risks[a])));
    box.append(part);
  }
  if (d.attributes_without_excerpts.length) box.append(h('p', null, 'attributes without valid excerpts: ', d.attributes_without_excerpts.join(', ')));
  if (d.error) box.append(h('p', null, 'error: ', d.error));
  return box;
}

function legend(t) {
  const seen = new Map();
  for (const e of t.excerpts) seen.set(e.trait, (seen.get(e.trait) || 0) + 1);
  return h('p', null, [...seen].map(([name, n]) => [chip(name, name + ' ×' + n), ' ']));
}

function runSwitch(id, current) {
  const box = h('p', {class: 'run-switch'});
  for (const [which, run, map] of [['before', R.before, R.beforeById], ['after', R.main, R.byId]]) {
    const t = map.get(id);
    const b = h('button', {type: 'button', 'data-switch': which, 'data-task': id, 'aria-pressed': String(run === current), disabled: !t},
      (which === 'before' ? 'earlier run: ' : 'later run: ') + run.label + ' ', t ? badge(t.status) : badge(null));
    box.append(b);
  }
  return box;
}

function taskView(t, run, id) {
  const q = R.data.questions[t.question] || {};
  const parts = [h('h2', null, t.question, replicateText(t), ' ', badge(t.status)),
    h('p', {class: 'muted'}, 'answered by ', t.answering, ', judged by ', t.judge)];
  if (R.before) parts.push(runSwitch(id, run));
  if (t.failure) parts.push(h('div', {class: 'failure'}, h('b', null, t.failure.category), ' at ', t.failure.stage, ': ', t.failure.reason));
  parts.push(h('h3', null, 'Question'), h('div', {class: 'pre'}, q.text || '—'));
  parts.push(h('h3', null, 'Expected answer'), h('div', {class: 'pre'}, q.expected === null || q.expected === undefined ? '—' : q.expected));
  parts.push(h('h3', null, 'Answer', t.answer_source ? ' (' + t.answer_source + ')' : ''));
  if (t.excerpts.length) parts.push(legend(t));
  if (t.transcript) parts.push(...transcriptView(t));
  else {
    const answer = h('div', {class: 'answer'});
    if (!t.has_answer) answer.append(h('span', {class: 'muted'}, 'no answer'));
    renderTree(t.tree, t, answer);
    parts.push(answer);
  }
  parts.push(revisionPanel(t) || '');
  if (t.traits.length) parts.push(h('h3', null, 'Rubric'), ...t.traits.map(tr => traitBlock(t, tr)));
  parts.push(templateBlock(t) || '', templateDeepBlock(t) || '');
  const c = t.coverage;
  if (c) {
    parts.push(h('h3', null, 'Coverage'), h('p', null, 'judged ' + c.judged + ' of ' + c.total + ' evaluations'));
    const gaps = Object.entries(c.unscored);
    if (gaps.length) parts.push(h('ul', null, gaps.map(([name, why]) => h('li', null, name, ': ', h('b', null, why)))));
  }
  if (t.errors.length) parts.push(h('h3', null, 'Errors'), h('ul', null, t.errors.map(e => h('li', null, e.stage, ' (', e.category, '): ', e.message))));
  if (t.warnings.length) parts.push(h('h3', null, 'Warnings'), h('ul', {class: 'notes'}, t.warnings.map(w => h('li', null, w))));
  parts.push(details('task details', facts([['task key', t.key], ['results file', run.label], ['evaluation mode', t.evaluation_mode],
    ['stages', t.stages.join(' → ')], ['caveats', t.caveats.join(', ')], ['time', fmt.secs(t.time)], ['tokens', t.tokens],
    ['model calls', t.calls], ['cached calls', t.cached_calls], ['finished', t.timestamp]])));
  return h('section', {class: 'task-view', 'data-task': id, 'data-run': R.before ? (run === R.before ? 'before' : 'after') : null}, parts);
}

function openTask(id, scroll, which) {
  const later = R.byId.get(id), earlier = R.beforeById.get(id);
  const useEarlier = which === 'before' ? !!earlier : !later;
  const t = useEarlier ? earlier : later;
  if (!t) return;
  const section = taskView(t, useEarlier ? R.before : R.main, id);
  byId('view').replaceChildren(section);
  for (const tr of document.querySelectorAll('tr.task.selected')) tr.classList.remove('selected');
  const row = T.rows.get(id);
  if (row) row.classList.add('selected');
  try { history.replaceState(null, '', '#task-' + id); } catch (err) { /* some browsers refuse it for file: pages */ }
  if (scroll) section.scrollIntoView({block: 'start'});
}
