/* The page's script, the task table: rows built from the data, filters, sorting and pages.

   Every task gets a row (`tr.task`); a row the filters leave out gets the `hidden` attribute. Past
   :data:`PAGE` matching rows the table is paged: rows on other pages get the class `off-page` (not
   `hidden`, which always means "filtered out"). */
const T = {rows: new Map(), order: [], sortKey: null, dir: 1, page: 0, PAGE: 500, hay: new Map()};

function plainText(nodes) {
  let out = '';
  for (const n of nodes) out += typeof n === 'string' ? n : plainText(n.c);
  return out;
}
function traitSummary(t) {
  const c = {};
  for (const tr of t.traits) { const k = (tr.status || 'not evaluated').replace('_', '-'); c[k] = (c[k] || 0) + 1; }
  return Object.entries(c).map(([k, n]) => n + ' ' + k).join(', ');
}
function replicateText(t) { return t.replicate !== null && t.replicate !== undefined ? ' #' + t.replicate : ''; }

const COLUMNS = [
  {key: 'question', label: 'question', value: t => t.question + replicateText(t),
   cell: t => h('a', {href: '#task-' + t.id}, t.question + replicateText(t))},
  {key: 'answering', label: 'answering model', value: t => t.answering},
  {key: 'judge', label: 'judge', value: t => t.judge},
  {key: 'status', label: 'status', value: t => STATUS_ORDER[t.status], cell: t => badge(t.status)},
  {key: 'category', label: 'failure', value: t => t.failure ? t.failure.category : '',
   cell: t => t.failure ? h('span', {title: t.failure.reason}, t.failure.category) : ''},
  {key: 'traits', label: 'traits', value: t => traitSummary(t)},
  {key: 'time', label: 'time (s)', value: t => t.time || 0, cell: t => (t.time || 0).toFixed(2)},
];
const REVISION_COLUMN = {key: 'revision', label: 'revision', value: t => t.revision ? t.revision.status : '',
  cell: t => t.revision ? [passBadge(t.revision.status), ' ' + t.revision.iterations + '/' + t.revision.max_iterations] : ''};
const BEFORE_COLUMN = {key: 'before', label: 'earlier run', value: t => { const b = R.beforeById.get(t.id); return b ? STATUS_ORDER[b.status] : 9; },
  cell: t => { const b = R.beforeById.get(t.id); return b ? badge(b.status) : h('span', {class: 'muted'}, 'not in the earlier run'); }};

function haystack(t) {
  let text = T.hay.get(t.id);
  if (text === undefined) {
    const q = R.data.questions[t.question] || {};
    text = [t.question, q.text, q.expected, plainText(t.tree), t.answering, t.judge, STATUS_LABEL[t.status],
      t.failure ? t.failure.category + ' ' + t.failure.reason : '',
      t.transcript ? t.transcript.blocks.map(b => plainText(b.body)).join('\n') : '',
      ...t.traits.map(x => [x.name, x.label, x.reason].filter(Boolean).join(' '))].filter(Boolean).join('\n').toLowerCase();
    T.hay.set(t.id, text);
  }
  return text;
}

function fillSelect(id, values) {
  const sel = byId(id);
  for (const v of values) sel.append(h('option', {value: v}, v));
}

function setupTable() {
  const revised = R.main.tasks.some(t => t.revision);
  const columns = [...COLUMNS, ...(revised ? [REVISION_COLUMN] : []), ...(R.before ? [BEFORE_COLUMN] : [])];
  T.columns = columns;
  const table = byId('tasks');
  table.append(h('thead', null, h('tr', null, columns.map(c => h('th', {'data-key': c.key, scope: 'col'}, c.label)))));
  const body = h('tbody');
  for (const t of R.main.tasks) {
    const tr = h('tr', {class: 'task', 'data-status': t.status, 'data-task': t.id},
      columns.map(c => h('td', null, c.cell ? c.cell(t) : c.value(t))));
    T.rows.set(t.id, tr);
    T.order.push(t.id);
    body.append(tr);
  }
  table.append(body);
  fillSelect('model-filter', [...new Set(R.main.tasks.map(pair))].sort());
  fillSelect('trait-filter', R.main.traits.map(t => t.name));
  fillSelect('category-filter', [...new Set(R.main.tasks.filter(t => t.failure).map(t => t.failure.category))].sort());
  fillSelect('revision-filter', [...new Set(R.main.tasks.filter(t => t.revision).map(t => t.revision.status))].sort());
  byId('revision-filter').hidden = !revised;
  for (const id of ['status-filter', 'model-filter', 'trait-filter', 'category-filter', 'revision-filter']) {
    byId(id).addEventListener('change', () => { T.page = 0; applyFilters(); });
  }
  byId('search').addEventListener('input', () => { T.page = 0; applyFilters(); });
  table.tHead.addEventListener('click', ev => {
    const th = ev.target instanceof Element ? ev.target.closest('th') : null;
    if (th) sortBy(th.dataset.key);
  });
  applyFilters();
}

function sortBy(key) {
  const col = T.columns.find(c => c.key === key);
  if (!col) return;
  T.dir = T.sortKey === key ? -T.dir : 1;
  T.sortKey = key;
  const position = new Map(R.main.tasks.map((t, i) => [t.id, i]));
  T.order.sort((a, b) => {
    const va = col.value(R.byId.get(a)), vb = col.value(R.byId.get(b));
    const d = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb), undefined, {numeric: true});
    return d * T.dir || position.get(a) - position.get(b);
  });
  const frag = document.createDocumentFragment();
  for (const id of T.order) frag.append(T.rows.get(id));
  byId('tasks').tBodies[0].append(frag);
  for (const th of byId('tasks').tHead.rows[0].cells) {
    if (th.dataset.key === key) th.setAttribute('aria-sort', T.dir > 0 ? 'ascending' : 'descending');
    else th.removeAttribute('aria-sort');
  }
  applyFilters();
}

function applyFilters() {
  const terms = byId('search').value.toLowerCase().split(/\s+/).filter(Boolean);
  const status = byId('status-filter').value, model = byId('model-filter').value;
  const trait = byId('trait-filter').value, category = byId('category-filter').value, revision = byId('revision-filter').value;
  const shown = [];
  for (const id of T.order) {
    const t = R.byId.get(id), tr = T.rows.get(id);
    const ok = (status === 'all' || t.status === status) && (model === 'all' || pair(t) === model) &&
      (trait === 'all' || t.traits.some(x => x.name === trait)) &&
      (category === 'all' || (t.failure ? t.failure.category : '') === category) &&
      (revision === 'all' || (t.revision ? t.revision.status : '') === revision) &&
      terms.every(w => haystack(t).includes(w));
    tr.hidden = !ok;
    if (ok) shown.push(tr); else tr.classList.remove('off-page');
  }
  const pages = Math.max(1, Math.ceil(shown.length / T.PAGE));
  T.page = Math.min(T.page, pages - 1);
  shown.forEach((tr, i) => tr.classList.toggle('off-page', Math.floor(i / T.PAGE) !== T.page));
  byId('shown').textContent = 'showing ' + shown.length + ' of ' + T.order.length + ' tasks';
  const pager = byId('pager');
  pager.replaceChildren();
  if (pages > 1) {
    const go = p => { T.page = p; applyFilters(); };
    const prev = h('button', {type: 'button', disabled: T.page === 0}, '‹ previous');
    const next = h('button', {type: 'button', disabled: T.page === pages - 1}, 'next ›');
    prev.addEventListener('click', () => go(T.page - 1));
    next.addEventListener('click', () => go(T.page + 1));
    pager.append(prev, next, 'page ' + (T.page + 1) + ' of ' + pages);
  }
}
