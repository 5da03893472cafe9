// The Postpone dashboard page script (served by `postpone dashboard`). It reads the JSON API under
// /api/ and writes every value with textContent (never innerHTML), so task data shows as text.
// Writing actions are POSTs carrying the page's CSRF token in the x-csrf-token header.
/* global Chart */

const meta = (name) => document.querySelector(`meta[name="${name}"]`).getAttribute('content');
const CSRF = meta('csrf-token');
const REFRESH_MS = Number(meta('refresh-ms'));
const LIST_LIMIT = Number(meta('list-limit'));
const $ = (id) => document.getElementById(id);

const view = {
  filters: { state: '', kind: '', queue: '', hasError: false },
  cursor: null, // cursor of the page shown (null: the first page)
  nextCursor: null,
  openId: null, // the task shown in the detail panel
  listSeq: 0,
  detailSeq: 0,
};

const iso = (value) => (value === null || value === undefined ? '–' : new Date(value).toISOString().replace('T', ' ').replace('Z', ' UTC'));
const text = (value) => (value === null || value === undefined ? '–' : String(value));
const ms = (value) => (value === null || value === undefined ? 'none due' : value < 1000 ? `${value} ms` : `${(value / 1000).toFixed(1)} s`);

function cell(content) {
  const td = document.createElement('td');
  td.textContent = content;
  return td;
}

async function api(path, init) {
  const response = await fetch(path, { credentials: 'same-origin', ...init });
  const body = await response.json().catch(() => ({ error: 'BAD_RESPONSE', message: `HTTP ${response.status}` }));
  if (!response.ok) throw Object.assign(new Error(`${body.error}: ${body.message}`), { status: response.status, body });
  return body;
}

function setStatus(message, isError) {
  const el = $('status');
  el.textContent = message;
  el.classList.toggle('error', Boolean(isError));
}

// ---- charts (Chart.js from the installed package) ---------------------------------------------
const dueChart = new Chart($('due-chart'), {
  type: 'bar',
  data: { labels: Array.from({ length: 60 }, (_, i) => `+${i}m`), datasets: [{ label: 'tasks due', data: new Array(60).fill(0), backgroundColor: '#4e79a7' }] },
  options: {
    animation: false,
    maintainAspectRatio: false,
    plugins: { legend: { display: false } },
    scales: { x: { title: { display: true, text: 'minutes from now (store clock)' } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'tasks' } } },
  },
});

const latenessChart = new Chart($('lateness-chart'), {
  type: 'scatter',
  data: {
    datasets: [
      { label: 'CLAIMED (due → claim or last renewal)', data: [], backgroundColor: '#f28e2b' },
      { label: 'DONE (due → completion)', data: [], backgroundColor: '#59a14f' },
    ],
  },
  options: {
    animation: false,
    maintainAspectRatio: false,
    scales: {
      x: { type: 'linear', title: { display: true, text: 'seconds before now (store clock)' } },
      y: { beginAtZero: true, title: { display: true, text: 'lateness, ms' } },
    },
  },
});

// ---- overview ----------------------------------------------------------------------------------
function renderOverview(o) {
  $('schema').textContent = o.schema;
  $('store-now').textContent = iso(o.stats.now);
  $('count-scheduled').textContent = String(o.stats.scheduled);
  $('count-due').textContent = String(o.stats.due);
  $('count-claimed').textContent = String(o.stats.claimed);
  $('count-dead').textContent = String(o.stats.dead);
  $('oldest-lateness').textContent = ms(o.stats.oldestDueLatenessMs);
  $('by-kind')
    .querySelector('tbody')
    .replaceChildren(
      ...o.stats.byKind.map((k) => {
        const tr = document.createElement('tr');
        tr.append(cell(k.kind), cell(String(k.scheduled)), cell(String(k.due)), cell(String(k.claimed)), cell(String(k.dead)));
        return tr;
      }),
    );
  const pausedKinds = new Set(o.paused.filter((p) => p.scope === 'kind').map((p) => p.name));
  for (const tr of $('by-kind').querySelectorAll('tbody tr')) {
    const kind = tr.firstChild.textContent;
    if (pausedKinds.has(kind)) {
      tr.firstChild.textContent = `${kind} (paused)`;
      tr.dataset.paused = 'true';
    }
  }
  $('paused')
    .querySelector('tbody')
    .replaceChildren(
      ...o.paused.map((p) => {
        const tr = document.createElement('tr');
        tr.dataset.scope = p.scope;
        tr.dataset.name = p.name;
        const resume = document.createElement('button');
        resume.type = 'button';
        resume.className = 'resume-button';
        resume.textContent = 'resume';
        resume.addEventListener('click', () => pauseAction('resume', { [p.scope]: p.name }));
        const td = document.createElement('td');
        td.append(resume);
        tr.append(cell(p.scope), cell(p.name), cell(iso(p.pausedAt)), cell(text(p.pausedBy)), cell(text(p.reason)), td);
        return tr;
      }),
    );
  $('unclaimed').hidden = o.unclaimed.kinds.length === 0;
  $('unclaimed-kinds')
    .querySelector('tbody')
    .replaceChildren(
      ...o.unclaimed.kinds.map((k) => {
        const tr = document.createElement('tr');
        tr.append(cell(k.queue), cell(k.kind), cell(k.due >= 1000 ? `${k.due}+` : String(k.due)), cell(iso(k.oldestDueAt)), cell(ms(k.overdueMs)));
        return tr;
      }),
    );
  $('rate-limits').hidden = o.rateLimits.length === 0 && o.keyRateLimits.length === 0;
  $('rate-limit-rows')
    .querySelector('tbody')
    .replaceChildren(
      ...o.rateLimits.map((l) => {
        const tr = document.createElement('tr');
        tr.append(cell(l.scope), cell(l.name), cell(String(l.limit)), cell(ms(l.windowMs)), cell(String(l.used)), cell(l.used < l.limit ? 'open' : iso(l.reopensAt)));
        return tr;
      }),
      // Per-key rate limits (docs/contract.md#per-key-rate-limits): the limit holds for each limit key of
      // the kind; "used now" is how many keys are full (held back) now.
      ...o.keyRateLimits.map((l) => {
        const tr = document.createElement('tr');
        tr.append(cell('each key of kind'), cell(l.kind), cell(String(l.limit)), cell(ms(l.windowMs)), cell(`${l.heldKeys} ${l.heldKeys === 1 ? 'key' : 'keys'} full`), cell(l.heldKeys === 0 ? 'open' : 'per key'));
        return tr;
      }),
    );
  dueChart.data.datasets[0].data = o.due.counts;
  dueChart.update('none');
  $('due-total').textContent = String(o.due.total);
  $('due-truncated').hidden = !o.due.truncated;
  const now = Date.parse(o.stats.now);
  const point = (p) => ({ x: (Date.parse(p.at) - now) / 1000, y: p.latenessMs });
  latenessChart.data.datasets[0].data = o.lateness.filter((p) => p.state === 'CLAIMED').map(point);
  latenessChart.data.datasets[1].data = o.lateness.filter((p) => p.state === 'DONE').map(point);
  latenessChart.update('none');
}

// ---- per-key backlog (docs/contract.md#key-backlog) ------------------------------------------------
async function loadKeyBacklog() {
  const v = await api('/api/key-backlog');
  $('key-backlog-section').hidden = v.kinds.length === 0;
  const rows = [];
  for (const k of v.kinds) {
    if (k.entries.length === 0) {
      const tr = document.createElement('tr');
      tr.dataset.kind = k.kind;
      tr.append(cell(k.kind), cell('(no keyed task scheduled or claimed)'), cell('0'), cell('0'), cell(`0 of ${k.limit} per key`), cell('–'));
      rows.push(tr);
    }
    for (const e of k.entries) {
      const tr = document.createElement('tr');
      tr.dataset.kind = k.kind;
      tr.dataset.key = e.limitKey;
      tr.append(cell(k.kind), cell(e.limitKey), cell(String(e.due)), cell(String(e.notDue)), cell(`${e.claimed} of ${k.limit}`), cell(e.oldestDueAt === null ? '–' : ms(e.latenessMs)));
      rows.push(tr);
    }
  }
  $('key-backlog').querySelector('tbody').replaceChildren(...rows);
  const more = v.kinds.filter((k) => k.more).map((k) => k.kind);
  $('key-backlog-more').hidden = more.length === 0 && !v.moreKinds;
  $('key-backlog-more').textContent = `${more.length > 0 ? `more keys than shown for: ${more.join(', ')}. ` : ''}${v.moreKinds ? 'more key-limited kinds than shown.' : ''}`.trim();
}

// ---- task list ---------------------------------------------------------------------------------
function listQuery() {
  const q = new URLSearchParams({ limit: String(LIST_LIMIT) });
  if (view.filters.state !== '') q.append('state', view.filters.state);
  if (view.filters.kind !== '') q.append('kind', view.filters.kind);
  if (view.filters.queue !== '') q.set('queue', view.filters.queue);
  if (view.filters.hasError) q.set('hasError', 'true');
  if (view.cursor !== null) q.set('cursor', view.cursor);
  return q;
}

async function loadList() {
  const seq = ++view.listSeq;
  const page = await api(`/api/tasks?${listQuery()}`);
  if (seq !== view.listSeq) return; // a newer request (other filters) is on its way
  view.nextCursor = page.nextCursor;
  $('tasks')
    .querySelector('tbody')
    .replaceChildren(
      ...page.tasks.map((t) => {
        const tr = document.createElement('tr');
        tr.dataset.id = t.id;
        tr.dataset.state = t.state;
        tr.tabIndex = 0;
        tr.classList.toggle('open', t.id === view.openId);
        const retry = t.retriedAs !== null ? `→ ${t.retriedAs}` : t.retryOf !== null ? `← ${t.retryOf}` : '';
        tr.append(
          cell(t.id),
          cell(t.kind),
          cell(t.queue),
          cell(String(t.priority)),
          cell(t.key ?? ''),
          cell(t.state),
          cell(iso(t.dueAt)),
          cell(String(t.attempt)),
          cell(`${t.failures} of ${t.maxAttempts}`),
          cell(retry),
          cell(t.lastError ?? ''),
        );
        tr.lastChild.title = t.lastError ?? '';
        return tr;
      }),
    );
  $('next-page').disabled = page.nextCursor === null;
  $('first-page').disabled = view.cursor === null;
  $('list-info').textContent = page.tasks.length === 0 ? 'no tasks match' : `${page.tasks.length} task(s) on this page`;
}

// ---- detail ------------------------------------------------------------------------------------
function showDetail(d) {
  const t = d.task;
  const panel = $('detail');
  if (panel.hidden || $('detail-id').textContent !== t.id) {
    // A newly opened task: the panel (fixed to the viewport) shows it from its top, with focus for the keyboard.
    panel.hidden = false;
    document.body.classList.add('detail-open');
    panel.scrollTop = 0;
    panel.focus({ preventScroll: true });
  }
  $('detail-id').textContent = t.id;
  $('detail-kind').textContent = t.kind;
  $('detail-queue').textContent = t.queue;
  $('detail-priority').textContent = String(t.priority);
  $('detail-key').textContent = text(t.key);
  $('detail-state').textContent = t.state;
  $('detail-state').dataset.state = t.state;
  $('detail-due').textContent = iso(t.dueAt);
  $('detail-attempts').textContent = `attempt ${t.attempt}, failures ${t.failures} of ${t.maxAttempts} allowed`;
  $('detail-lease').textContent = t.leaseOwner === null ? '–' : `${t.leaseOwner} until ${iso(t.leaseUntil)}`;
  $('detail-cancel-requested').textContent = t.cancelRequested ? 'yes' : 'no';
  $('detail-retry').textContent = `${text(t.retryOf)} / ${text(t.retriedAs)}`;
  $('detail-times').textContent = `${iso(t.createdAt)} / ${iso(t.updatedAt)}`;
  $('detail-error').textContent = t.lastError ?? '–';
  $('detail-payload').textContent = JSON.stringify(t.payload, null, 2);
  $('detail-result').textContent = t.result === null ? '–' : JSON.stringify(t.result, null, 2);
  $('detail-progress').textContent = t.progress === undefined ? '–' : JSON.stringify(t.progress, null, 2);
  $('detail-completion').textContent = d.completion === null ? '–' : `attempt ${d.completion.attempt} by ${d.completion.worker ?? '(unknown)'} at ${iso(d.completion.finishedAt)}`;
  $('retry-button').disabled = !(t.state === 'DEAD' || t.state === 'CANCELLED');
  $('cancel-button').disabled = !(t.state === 'SCHEDULED' || (t.state === 'CLAIMED' && !t.cancelRequested));
  for (const tr of $('tasks').querySelectorAll('tbody tr')) tr.classList.toggle('open', tr.dataset.id === t.id);
}

async function loadDetail() {
  if (view.openId === null) return;
  const seq = ++view.detailSeq;
  try {
    const d = await api(`/api/tasks/${encodeURIComponent(view.openId)}`);
    if (seq === view.detailSeq) showDetail(d);
  } catch (error) {
    if (error.status === 404 && seq === view.detailSeq) {
      $('detail-state').textContent = 'not found (pruned?)';
      $('retry-button').disabled = true;
      $('cancel-button').disabled = true;
    } else throw error;
  }
}

async function openTask(id) {
  if (view.openId !== id) $('action-message').textContent = '';
  view.openId = id;
  await loadDetail();
  // Opening the panel narrows the list on wide windows and the rows reflow: keep the opened row in view.
  document.querySelector(`#tasks tbody tr[data-id="${CSS.escape(id)}"]`)?.scrollIntoView({ block: 'nearest' });
}

function retryMessage(id, r) {
  switch (r.outcome) {
    case 'RETRIED':
      return `RETRIED task ${id} as task ${r.id}, due ${iso(r.dueAt)}`;
    case 'ALREADY_RETRIED':
      return `ALREADY_RETRIED: task ${id} was retried before as task ${r.id}`;
    case 'NOT_RETRYABLE':
      return `NOT_RETRYABLE: task ${id} is ${r.state}`;
    default:
      return `${r.outcome}: task ${id}`;
  }
}

async function act(action) {
  const id = view.openId;
  if (id === null) return;
  const message = $('action-message');
  try {
    const r = await api(`/api/tasks/${encodeURIComponent(id)}/${action}`, { method: 'POST', headers: { 'x-csrf-token': CSRF } });
    message.textContent = action === 'retry' ? retryMessage(id, r) : `${r.outcome}: task ${id}`;
    message.dataset.outcome = r.outcome;
    if (r.id !== undefined) message.dataset.newId = r.id;
    else delete message.dataset.newId;
  } catch (error) {
    message.textContent = `${action} failed: ${error.message}`;
    message.dataset.outcome = 'ERROR';
  }
  await refresh();
}

// ---- pause / resume (docs/contract.md#pause-and-resume) ----------------------------------------
async function pauseAction(action, body) {
  const message = $('pause-message');
  const what = body.queue !== undefined ? `queue ${body.queue}` : `kind ${body.kind}`;
  try {
    const r = await api(`/api/${action}`, { method: 'POST', headers: { 'x-csrf-token': CSRF, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    message.textContent = action === 'pause' ? (r.changed ? `paused ${what}` : `${what} was already paused`) : r.changed ? `resumed ${what}` : `${what} was not paused`;
    message.dataset.outcome = r.changed ? 'CHANGED' : 'UNCHANGED';
  } catch (error) {
    message.textContent = `${action} failed: ${error.message}`;
    message.dataset.outcome = 'ERROR';
  }
  await refresh();
}

// ---- refresh loop ------------------------------------------------------------------------------
let refreshing = null;
async function refresh() {
  if (refreshing !== null) return refreshing; // one refresh at a time
  refreshing = (async () => {
    try {
      const o = await api('/api/overview');
      renderOverview(o);
      await Promise.all([loadList(), loadDetail(), loadKeyBacklog()]);
      setStatus(`updated ${iso(o.stats.now)}`, false);
      document.body.dataset.refreshedAt = o.stats.now;
    } catch (error) {
      setStatus(`refresh failed: ${error.message}`, true);
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

let timer = null;
function schedule() {
  clearTimeout(timer);
  if ($('auto-refresh').checked) timer = setTimeout(() => refresh().finally(schedule), REFRESH_MS);
}

$('refresh-seconds').textContent = String(REFRESH_MS / 1000);
$('auto-refresh').addEventListener('change', schedule);
$('filters').addEventListener('submit', (event) => {
  event.preventDefault();
  view.filters = { state: $('filter-state').value, kind: $('filter-kind').value.trim(), queue: $('filter-queue').value.trim(), hasError: $('filter-error').checked };
  view.cursor = null;
  loadList().catch((error) => setStatus(`list failed: ${error.message}`, true));
});
$('filter-state').addEventListener('change', () => $('filters').requestSubmit());
$('filter-error').addEventListener('change', () => $('filters').requestSubmit());
$('next-page').addEventListener('click', () => {
  if (view.nextCursor === null) return;
  view.cursor = view.nextCursor;
  loadList().catch((error) => setStatus(`list failed: ${error.message}`, true));
});
$('first-page').addEventListener('click', () => {
  view.cursor = null;
  loadList().catch((error) => setStatus(`list failed: ${error.message}`, true));
});
$('tasks')
  .querySelector('tbody')
  .addEventListener('click', (event) => {
    const tr = event.target.closest('tr[data-id]');
    if (tr !== null) openTask(tr.dataset.id).catch((error) => setStatus(`detail failed: ${error.message}`, true));
  });
$('tasks')
  .querySelector('tbody')
  .addEventListener('keydown', (event) => {
    const tr = event.target.closest('tr[data-id]');
    if (tr !== null && event.key === 'Enter') openTask(tr.dataset.id).catch((error) => setStatus(`detail failed: ${error.message}`, true));
  });
function closeDetail() {
  view.openId = null;
  $('detail').hidden = true;
  document.body.classList.remove('detail-open');
}
$('detail-close').addEventListener('click', closeDetail);
$('detail').addEventListener('keydown', (event) => {
  if (event.key === 'Escape') closeDetail();
});
$('pause-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const reason = $('pause-reason').value.trim();
  pauseAction('pause', { [$('pause-scope').value]: $('pause-name').value.trim(), ...(reason === '' ? {} : { reason }) });
});
// ---- one batch (GET /api/batches/:id): counts, seal and callback, every value as text ----
async function showBatch(id) {
  const message = $('batch-message');
  message.textContent = '';
  try {
    const b = await api(`/api/batches/${encodeURIComponent(id)}`);
    $('batch-state').textContent = b.state;
    $('batch-counts').textContent = `${b.total} total, ${b.remaining} remaining: ${b.done} DONE, ${b.dead} DEAD, ${b.cancelled} CANCELLED`;
    $('batch-times').textContent = `${iso(b.createdAt)} / ${iso(b.sealedAt)}`;
    const cb = b.callback;
    $('batch-callback').textContent = `kind ${cb.kind}, queue ${cb.queue}, priority ${cb.priority}, due ${cb.delayMs} ms after the batch completes`;
    $('batch-callback-task').textContent = b.callbackTaskId === null ? 'not scheduled yet' : `${b.callbackTaskId} at ${iso(b.calledBackAt)}`;
    $('batch-open-callback').hidden = b.callbackTaskId === null;
    $('batch-open-callback').dataset.id = b.callbackTaskId ?? '';
    $('batch-callback-payload').textContent = JSON.stringify(cb.payload, null, 2);
    $('batch').hidden = false;
  } catch (error) {
    $('batch').hidden = true;
    message.textContent = error.status === 404 ? `no batch ${id}` : `batch failed: ${error.message}`;
  }
}
$('batch-form').addEventListener('submit', (event) => {
  event.preventDefault();
  showBatch($('batch-id').value.trim());
});
$('batch-open-callback').addEventListener('click', () => {
  const id = $('batch-open-callback').dataset.id;
  if (id) openTask(id).catch((error) => setStatus(`detail failed: ${error.message}`, true));
});
$('retry-button').addEventListener('click', () => act('retry'));
$('cancel-button').addEventListener('click', () => act('cancel'));

// ---- bulk actions (POST /api/bulk/:op): the count first (a dry run) in a dialog, then the action ----
const BULK_VERB = { cancel: 'Cancel', retry: 'Retry', delete: 'Delete' };
const BULK_ACTING = { cancel: ['CANCELLED', 'REQUESTED'], retry: ['RETRIED'], delete: ['DELETED'] };
const bulk = { op: null, filter: null };

/** The filter of the list's form as the store's bulk filter (the server refuses one naming nothing). */
function bulkFilter() {
  const f = {};
  if (view.filters.kind !== '') f.kinds = [view.filters.kind];
  if (view.filters.queue !== '') f.queue = view.filters.queue;
  if (view.filters.state !== '') f.states = [view.filters.state];
  return f;
}

const countsText = (counts) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([o, n]) => `${o} ${n}`)
    .join(', ') || 'nothing';

async function bulkPost(op, body) {
  return api(`/api/bulk/${op}`, { method: 'POST', headers: { 'x-csrf-token': CSRF, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function bulkAsk(op) {
  const message = $('bulk-message');
  const filter = bulkFilter();
  try {
    const dry = await bulkPost(op, { filter, dryRun: true });
    const n = BULK_ACTING[op].reduce((sum, o) => sum + (dry.counts[o] ?? 0), 0);
    if (n === 0) {
      message.textContent = `no task to ${op}: ${countsText(dry.counts)}`;
      message.dataset.outcome = 'NONE';
      return;
    }
    bulk.op = op;
    bulk.filter = filter;
    const described = Object.entries(filter)
      .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(', ') : v}`)
      .join(', ');
    $('bulk-question').textContent = `${BULK_VERB[op]} ${n} task${n === 1 ? '' : 's'} (${described})?`;
    $('bulk-counts').textContent = `would be: ${countsText(dry.counts)}. Done in batches, each its own short transaction.`;
    $('bulk-dialog').dataset.count = String(n);
    $('bulk-dialog').showModal();
  } catch (error) {
    message.textContent = `${op} failed: ${error.message}`;
    message.dataset.outcome = 'ERROR';
  }
}

async function bulkConfirm() {
  $('bulk-dialog').close();
  const { op, filter } = bulk;
  bulk.op = null;
  if (op === null) return;
  const message = $('bulk-message');
  try {
    const r = await bulkPost(op, { filter });
    message.textContent = `${op}: ${countsText(r.counts)} in ${r.batches} batch${r.batches === 1 ? '' : 'es'}`;
    message.dataset.outcome = 'DONE';
  } catch (error) {
    message.textContent = `${op} failed: ${error.message}`;
    message.dataset.outcome = 'ERROR';
  }
  await refresh();
}

for (const id of ['bulk-cancel', 'bulk-retry', 'bulk-delete']) $(id).addEventListener('click', (event) => bulkAsk(event.currentTarget.dataset.op));
$('bulk-confirm').addEventListener('click', () => bulkConfirm());
$('bulk-abort').addEventListener('click', () => {
  bulk.op = null;
  $('bulk-dialog').close();
  $('bulk-message').textContent = 'nothing done';
  $('bulk-message').dataset.outcome = 'ABORTED';
});

refresh().finally(schedule);
