/**
 * The nodes of an `EXPLAIN (FORMAT JSON)` plan (PostgreSQL 17 §14.1, the JSON output of EXPLAIN) that
 * the plan tests read, and the walk that lists every node of a plan tree.
 */
export type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Filter?: string;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Subplan Name'?: string;
  Plans?: PlanNode[];
};

/** `node` and every node below it, depth first. */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
