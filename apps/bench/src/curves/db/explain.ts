/**
 * Reading `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` output (PostgreSQL 17 EXPLAIN; §14.1).
 *
 * Buffer counts of a node include its children, so the root node's shared hit + read blocks are the
 * pages the whole statement touched.
 */

/** One plan node as PostgreSQL prints it in JSON (only the fields the bench reads). */
export interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Index Name'?: string;
  readonly 'Index Cond'?: string;
  readonly Filter?: string;
  readonly 'Rows Removed by Filter'?: number;
  readonly 'Actual Rows'?: number;
  readonly 'Shared Hit Blocks'?: number;
  readonly 'Shared Read Blocks'?: number;
  readonly Plans?: readonly PlanNode[];
}

export interface ExplainJson {
  readonly Plan: PlanNode;
  readonly 'Execution Time': number;
  readonly 'Planning Time': number;
}

/** Every node of a plan, depth first. */
export function planNodes(root: PlanNode): PlanNode[] {
  const out: PlanNode[] = [];
  const visit = (node: PlanNode) => {
    out.push(node);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return out;
}

/** What the bench reports about the scan that finds due tasks. */
export interface ScanSummary {
  /** e.g. `Index Scan`, `Seq Scan`. */
  readonly nodeType: string;
  readonly indexName: string | null;
  readonly indexCond: string | null;
  readonly filter: string | null;
  readonly rowsRemovedByFilter: number;
  /** Shared buffers (hit + read) of the whole statement. */
  readonly buffers: number;
  /** Shared buffers of the scan node alone (the pages of the index and table it visited). */
  readonly scanBuffers: number;
  readonly executionMs: number;
}

/**
 * Summarises the plan of a claim: the scan node on the task table (the one with an index condition
 * or a filter mentioning `due_at`), and the statement's buffers.
 * @throws Error when no such scan exists
 */
export function summarizeDueScan(explain: ExplainJson): ScanSummary {
  const nodes = planNodes(explain.Plan);
  const scan = nodes.find((n) => /due_at/.test(`${n['Index Cond'] ?? ''} ${n.Filter ?? ''}`));
  if (!scan) throw new Error(`no scan on due_at in plan: ${nodes.map((n) => n['Node Type']).join(' > ')}`);
  const root = explain.Plan;
  return {
    nodeType: scan['Node Type'],
    indexName: scan['Index Name'] ?? null,
    indexCond: scan['Index Cond'] ?? null,
    filter: scan.Filter ?? null,
    rowsRemovedByFilter: scan['Rows Removed by Filter'] ?? 0,
    buffers: (root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0),
    scanBuffers: (scan['Shared Hit Blocks'] ?? 0) + (scan['Shared Read Blocks'] ?? 0),
    executionMs: explain['Execution Time'],
  };
}

/** Parses the single row of `EXPLAIN (FORMAT JSON)` as returned by node-postgres. */
export function parseExplainRows(rows: readonly Record<string, unknown>[]): ExplainJson {
  const cell = rows[0]?.['QUERY PLAN'];
  const parsed = (typeof cell === 'string' ? JSON.parse(cell) : cell) as ExplainJson[] | undefined;
  const first = parsed?.[0];
  if (!first) throw new Error('EXPLAIN returned no plan');
  return first;
}
