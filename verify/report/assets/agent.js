/* The page's script, revisions and transcripts: the run's revision summary, a task's revision panel,
   and a transcript answer drawn as blocks.

   DOM (see verify.report): `<section id="revision-summary">` in the run header;
   `<section class="revisions" data-status="..">` in a task view, with one
   `<tr class="revision-pass" data-iteration=".." data-result="..">` per pass and its criteria as
   `<li class="criterion" data-passed="true|false|none">`; a transcript as
   `<div class="transcript">` of `<div class="block" id="<task>-B<n>" data-role=".." data-kind="message|call|result">`
   (a `span.block-head` and a `span.block-body`), followed by the submission in `div.answer`.
   An excerpt marked in the transcript shows its block in its label (`E2·B3`). */
const PASS_LABEL = {satisfied: 'satisfied', needs_revision: 'needs revision', failed: 'failed', grader_error: 'grader error',
  max_iterations_reached: 'max iterations reached'};
function passBadge(result) { return h('span', {class: 'rv rv-' + result}, PASS_LABEL[result] || result); }
function passText(p) {
  return (PASS_LABEL[p.result] || p.result) + ' (verdict ' + (p.verdict || '—') + ', score ' + fmt.num(p.score) + ')';
}
function counted(obj) { return Object.entries(obj).map(([k, n]) => k + ': ' + n).join(', '); }

function revisionSummary(rv) {
  const box = h('section', {id: 'revision-summary'}, h('h3', null, 'Revisions'));
  box.append(h('div', {class: 'cards'}, card('tasks revised', fmt.num(rv.tasks)),
    card('iterations used', fmt.num(rv.iterations), 'mean ' + (rv.iterations / rv.tasks).toFixed(2) + ' per task'),
    ...Object.entries(rv.statuses).map(([k, n]) => card(PASS_LABEL[k] || k, fmt.num(n)))));
  box.append(facts([['first → last pass', counted(rv.changes)], ['first → last verdict', counted(rv.verdict_changes)],
    ['satisfied after (passes: tasks)', counted(rv.satisfied_after)],
    ['mean rubric score', rv.score_first === null ? null : fmt.num(rv.score_first) + ' → ' + fmt.num(rv.score_last)]]));
  return box;
}

function criterionItem(c) {
  const state = c.passed === true ? 'true' : c.passed === false ? 'false' : 'none';
  const sign = c.passed === true ? '✓ ' : c.passed === false ? '✗ ' : '? ';
  return h('li', {class: 'criterion', 'data-passed': state}, sign, h('b', null, c.name), c.gap ? ' — ' + c.gap : '');
}

function revisionPanel(t) {
  const rv = t.revision;
  if (!rv) return null;
  const box = h('section', {class: 'revisions', 'data-status': rv.status}, h('h3', null, 'Revisions'));
  box.append(h('p', null, 'status: ', passBadge(rv.status), ' after ' + rv.iterations + ' of at most ' + rv.max_iterations + ' passes'));
  if (rv.first && rv.last) box.append(h('p', null, 'first answer: ' + passText(rv.first) + ' → last answer: ' + passText(rv.last)));
  const rows = rv.evaluations.map(p => h('tr', {class: 'revision-pass', 'data-iteration': p.iteration, 'data-result': p.result},
    h('td', null, String(p.iteration + 1)), h('td', null, passBadge(p.result)), h('td', null, p.verdict || '—'), h('td', null, fmt.num(p.score)),
    h('td', null, p.explanation, details('answer of this pass', h('div', {class: 'pre'}, p.answer === null ? 'no answer' : p.answer))),
    h('td', null, p.criteria.length ? h('ul', {class: 'criteria'}, p.criteria.map(criterionItem)) : '—')));
  box.append(h('table', {class: 'revision-passes'}, h('thead', null, h('tr', null,
    ['pass', 'result', 'verdict', 'score', 'explanation and answer', 'criteria'].map(x => h('th', null, x)))), h('tbody', null, rows)));
  return box;
}

const READ_HOW = {blocks: 'its quotes record their blocks', offsets: 'its quotes sit at their offsets in that text',
  config: "per the run's config"};
function readsText(t) {
  const tr = t.transcript, out = [];
  for (const [kind, label] of [['trait', 'rubric deep judgment'], ['attribute', 'template deep judgment']]) {
    if (!t.excerpts.some(e => e.kind === kind)) continue;
    out.push(label + ' read ' + (tr.reads[kind] === 'trace' ? 'the full trace' : 'the final answer') + ' (' + READ_HOW[tr.how[kind]] + ')');
  }
  return out;
}

function transcriptView(t) {
  const tr = t.transcript;
  const about = [tr.messages + ' message' + (tr.messages === 1 ? '' : 's'), tr.tool_calls + ' tool call' + (tr.tool_calls === 1 ? '' : 's'), ...readsText(t)];
  const list = h('div', {class: 'transcript'}, tr.blocks.map(b => {
    const head = h('span', {class: 'block-head'}), body = h('span', {class: 'block-body'});
    renderTree(b.head, t, head);
    renderTree(b.body, t, body);
    return h('div', {class: 'block' + (b.error ? ' error' : ''), id: t.id + '-B' + b.n, 'data-role': b.role, 'data-kind': b.kind,
      'data-tool': b.tool || null}, head, body);
  }));
  const answer = h('div', {class: 'answer'});
  renderTree(t.tree, t, answer);
  if (!t.tree.length) answer.append(h('span', {class: 'muted'}, 'the final answer is empty'));
  return [h('h3', null, 'Transcript'), h('p', {class: 'muted'}, about.join(' · ')), list,
    h('h3', null, 'Final answer ', h('span', {class: 'muted'}, '(submission: ' + tr.extractor + ')')), answer];
}
