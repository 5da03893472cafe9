/**
 * The dashboard's one HTML page: a static skeleton. It holds no task data: the script
 * (`assets/dashboard.js`) fetches `/api/…` and writes every value with `textContent`, so a payload
 * holding `<script>` shows as text. The only values put into the HTML are the CSRF token (64 hex
 * digits) and two integers, all checked here before they are written.
 */

export interface PageOptions {
  readonly csrfToken: string;
  readonly refreshMs: number;
  readonly listLimit: number;
}

const STATES = ['SCHEDULED', 'CLAIMED', 'DONE', 'CANCELLED', 'DEAD'] as const;

/** The page for one dashboard process. @throws Error when a value is not of the shape above */
export function pageHtml({ csrfToken, refreshMs, listLimit }: PageOptions): string {
  if (!/^[0-9a-f]{64}$/.test(csrfToken)) throw new Error('csrfToken must be 64 hex digits');
  if (!Number.isInteger(refreshMs) || !Number.isInteger(listLimit)) throw new Error('refreshMs and listLimit must be integers');
  const stateOptions = STATES.map((s) => `<option value="${s}">${s}</option>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${csrfToken}">
<meta name="refresh-ms" content="${refreshMs}">
<meta name="list-limit" content="${listLimit}">
<title>Postpone dashboard</title>
<link rel="stylesheet" href="/assets/dashboard.css">
<script src="/assets/chart.umd.min.js"></script>
<script type="module" src="/assets/dashboard.js"></script>
</head>
<body>
<header>
  <h1>Postpone</h1>
  <span>schema <b id="schema">…</b></span>
  <span>store clock <b id="store-now">…</b></span>
  <label><input type="checkbox" id="auto-refresh" checked> auto-refresh every <span id="refresh-seconds"></span> s</label>
  <span id="status" role="status">loading…</span>
</header>
<main>
<section id="counts" aria-label="Counts by state">
  <div class="card scheduled"><span class="label">SCHEDULED</span><span class="value" id="count-scheduled">–</span></div>
  <div class="card due"><span class="label">due, waiting</span><span class="value" id="count-due">–</span></div>
  <div class="card claimed"><span class="label">CLAIMED</span><span class="value" id="count-claimed">–</span></div>
  <div class="card dead"><span class="label">DEAD</span><span class="value" id="count-dead">–</span></div>
  <div class="card late"><span class="label">oldest due task late by</span><span class="value" id="oldest-lateness">–</span></div>
  <p class="note">Live counts from the store's <code>stats()</code>. DONE and CANCELLED are history and are not counted here
  (that would read every finished row): list them with the state filter.</p>
  <table id="by-kind"><thead><tr><th>kind</th><th>scheduled</th><th>due</th><th>claimed</th><th>dead</th></tr></thead><tbody></tbody></table>
  <div id="unclaimed" role="alert" hidden>
    <p class="note"><b>Kinds due with nobody claiming</b>: the oldest task has been due a minute or more and none of the kind is CLAIMED
    (no worker handles it — a missing handler or a typo at the call site — or every worker is down or busy).</p>
    <table id="unclaimed-kinds"><thead><tr><th>queue</th><th>kind</th><th>due</th><th>oldest due</th><th>waiting</th></tr></thead><tbody></tbody></table>
  </div>
  <div id="rate-limits" hidden>
    <p class="note"><b>Rate limits</b>: at most <i>limit</i> claims of the kind or queue in any window, for every worker
    (<code>postpone limits</code>); a per-key limit holds for each limit key of the kind on its own (<code>postpone limits key-rates</code>);
    tasks held back stay SCHEDULED.</p>
    <table id="rate-limit-rows"><thead><tr><th>scope</th><th>name</th><th>limit</th><th>window</th><th>used now</th><th>reopens</th></tr></thead><tbody></tbody></table>
  </div>
</section>
<section id="key-backlog-section" aria-label="Per-key backlog" hidden>
  <h2>Per-key backlog</h2>
  <p class="note">Kinds with a per-key concurrency limit (<code>postpone limits keys</code>): at most <i>limit</i> CLAIMED
  tasks per limit key, claims rotating among the keys. Their top keys by due tasks (<code>postpone limits keys backlog --kind K</code>
  lists them all); waiting is how long the key's oldest due task has been due (store clock).</p>
  <table id="key-backlog"><thead><tr><th>kind</th><th>limit key</th><th>due</th><th>not due</th><th>claimed</th><th>oldest due waiting</th></tr></thead><tbody></tbody></table>
  <p id="key-backlog-more" class="note" hidden></p>
</section>
<section class="charts">
  <figure>
    <figcaption>SCHEDULED tasks due in the next hour, per minute (<span id="due-total">0</span> tasks<span id="due-truncated" hidden>; only the first 5 000 counted</span>)</figcaption>
    <div class="chart"><canvas id="due-chart"></canvas></div>
  </figure>
  <figure>
    <figcaption>Lateness of recent claims (ms, the newest 200 CLAIMED or DONE tasks). The store keeps no claim time, so each
    point is <code>updatedAt − dueAt</code>: for CLAIMED the claim or its last lease renewal, for DONE the completion
    (handler time included) — an upper bound of due → claim.</figcaption>
    <div class="chart"><canvas id="lateness-chart"></canvas></div>
  </figure>
</section>
<section id="list" aria-label="Tasks">
  <h2>Tasks</h2>
  <form id="filters">
    <label>state <select id="filter-state"><option value="">any</option>${stateOptions}</select></label>
    <label>kind <input id="filter-kind" type="text" maxlength="200" placeholder="any" autocomplete="off"></label>
    <label>queue <input id="filter-queue" type="text" maxlength="200" placeholder="any" autocomplete="off"></label>
    <label><input id="filter-error" type="checkbox"> with last error only</label>
    <button type="submit">apply</button>
  </form>
  <p class="bulk" aria-label="Bulk actions on the tasks the filter matches">
    on every task the filter matches (kind or queue required):
    <button id="bulk-cancel" type="button" data-op="cancel">cancel all…</button>
    <button id="bulk-retry" type="button" data-op="retry">retry DEAD…</button>
    <button id="bulk-delete" type="button" data-op="delete">delete finished…</button>
    <span id="bulk-message" role="status"></span>
  </p>
  <dialog id="bulk-dialog" aria-labelledby="bulk-question">
    <p id="bulk-question"></p>
    <p id="bulk-counts" class="note"></p>
    <p><button id="bulk-confirm" type="button">yes, do it</button> <button id="bulk-abort" type="button">no, keep them</button></p>
  </dialog>
  <div class="table-scroll">
  <table id="tasks">
    <thead><tr><th>id</th><th>kind</th><th>queue</th><th>priority</th><th>key</th><th>state</th><th>due</th><th title="claims so far, hand-backs and reclaims included">attempt</th><th title="failures so far of the failures allowed before DEAD">failures</th><th>retry</th><th>last error</th></tr></thead>
    <tbody></tbody>
  </table>
  </div>
  <p><button id="first-page" type="button" disabled>first page</button> <button id="next-page" type="button" disabled>next page</button> <span id="list-info"></span></p>
</section>
<section id="paused-section" aria-label="Paused queues and kinds">
  <h2>Paused</h2>
  <p class="note">Paused queues and kinds: no worker claims their tasks (they keep their due time and attempts); running tasks finish.</p>
  <table id="paused"><thead><tr><th>scope</th><th>name</th><th>since</th><th>by</th><th>reason</th><th></th></tr></thead><tbody></tbody></table>
  <form id="pause-form">
    <label>pause <select id="pause-scope"><option value="queue">queue</option><option value="kind">kind</option></select></label>
    <input id="pause-name" type="text" maxlength="200" placeholder="name" autocomplete="off" required>
    <input id="pause-reason" type="text" maxlength="500" placeholder="reason (optional)" autocomplete="off">
    <button type="submit">pause</button>
    <span id="pause-message" role="status"></span>
  </form>
</section>
<section id="batch-section" aria-label="Batch">
  <h2>Batch</h2>
  <form id="batch-form">
    <label>batch id <input id="batch-id" type="text" inputmode="numeric" maxlength="20" placeholder="id" autocomplete="off" required></label>
    <button type="submit">show</button>
    <span id="batch-message" role="status"></span>
  </form>
  <dl id="batch" hidden>
    <dt>state</dt><dd id="batch-state"></dd>
    <dt>members</dt><dd id="batch-counts"></dd>
    <dt>created / sealed</dt><dd id="batch-times"></dd>
    <dt>callback</dt><dd id="batch-callback"></dd>
    <dt>callback task</dt><dd><span id="batch-callback-task"></span> <button id="batch-open-callback" type="button" hidden>open</button></dd>
    <dt>callback payload</dt><dd><pre id="batch-callback-payload"></pre></dd>
  </dl>
</section>
<section id="detail" aria-label="Task detail" tabindex="-1" hidden>
  <div class="detail-head">
    <h2>Task <span id="detail-id"></span> <button id="detail-close" type="button">close</button></h2>
    <p class="actions">
      <button id="retry-button" type="button" disabled>retry</button>
      <button id="cancel-button" type="button" disabled>cancel</button>
      <span id="action-message" role="status"></span>
    </p>
  </div>
  <dl>
    <dt>kind</dt><dd id="detail-kind"></dd>
    <dt>queue</dt><dd id="detail-queue"></dd>
    <dt>priority</dt><dd id="detail-priority"></dd>
    <dt>key</dt><dd id="detail-key"></dd>
    <dt>state</dt><dd id="detail-state"></dd>
    <dt>due</dt><dd id="detail-due"></dd>
    <dt>attempts</dt><dd id="detail-attempts"></dd>
    <dt>lease</dt><dd id="detail-lease"></dd>
    <dt>cancel requested</dt><dd id="detail-cancel-requested"></dd>
    <dt>retry of / retried as</dt><dd id="detail-retry"></dd>
    <dt>created / updated</dt><dd id="detail-times"></dd>
    <dt>last error</dt><dd><pre id="detail-error"></pre></dd>
    <dt>payload</dt><dd><pre id="detail-payload"></pre></dd>
    <dt>result</dt><dd><pre id="detail-result"></pre></dd>
    <dt>progress</dt><dd><pre id="detail-progress"></pre></dd>
    <dt>completed</dt><dd id="detail-completion"></dd>
  </dl>
</section>
</main>
</body>
</html>
`;
}
