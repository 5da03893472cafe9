/**
 * Read-only queries a test uses to judge a case by the database itself (never by what the workers
 * say about it).
 */
import pg from 'pg';
import { APP_EFFECT_TABLE } from './app-effect.js';

/** A task row as the cases print it. */
export interface TaskView {
  readonly id: string;
  readonly state: string;
  readonly attempt: number;
  readonly leaseOwner: string | null;
  /** Epoch ms (database clock), or null. */
  readonly leaseUntilMs: number | null;
  readonly dueAtMs: number;
  readonly result: { by?: string; attempt?: number } | null;
  readonly lastError: string | null;
}

export interface EffectView {
  readonly taskId: string;
  readonly attempt: number;
  readonly worker: string;
}

const ms = (expr: string) => `floor(extract(epoch from ${expr}) * 1000)::float8`;

export class DbInspector {
  private readonly taskTable: string;
  private readonly liveTable: string;
  private readonly effectTable: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    // Live tasks and finished ones (migration 11 moves them to task_history): every task, once.
    const q = pg.escapeIdentifier(schema);
    const columns = 'id, state, attempt, lease_owner, lease_until, due_at, result, last_error';
    this.taskTable = `(select ${columns} from ${q}.task union all select ${columns} from ${q}.task_history)`;
    this.liveTable = `${q}.task`;
    // The handler's own effect rows (the seed's `effect` table, the application's since migration 13).
    this.effectTable = `${pg.escapeIdentifier(schema)}.${APP_EFFECT_TABLE}`;
  }

  async task(id: string): Promise<TaskView> {
    const { rows } = await this.pool.query<TaskView>(
      `select id::text as id, state, attempt, lease_owner as "leaseOwner", ${ms('lease_until')} as "leaseUntilMs",
              ${ms('due_at')} as "dueAtMs", result, last_error as "lastError"
         from ${this.taskTable} t where id = $1::bigint`,
      [id],
    );
    const row = rows[0];
    if (!row) throw new Error(`task ${id} not found`);
    return row;
  }

  /** `app_effect` rows of one task (its primary key allows at most one), or of all tasks. */
  async effects(id?: string): Promise<EffectView[]> {
    const where = id === undefined ? '' : 'where task_id = $1::bigint';
    const { rows } = await this.pool.query<EffectView>(
      `select task_id::text as "taskId", attempt, worker from ${this.effectTable} ${where} order by task_id, attempt`,
      id === undefined ? [] : [id],
    );
    return rows;
  }

  /**
   * Number of `ids` still in the live table `task` (SCHEDULED or CLAIMED: `task_live_state` keeps
   * nothing else there), read without `task_history`: a run's open tasks, cheap however many have
   * finished. `pnpm backlog-million` waited on {@link countIn} over both tables with a million ids: a
   * call took about 30 s and the wait had not ended 5 min after every task was DONE.
   */
  async countLive(ids: readonly string[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(`select count(*)::int as n from ${this.liveTable} where id = any($1::bigint[])`, [ids]);
    return rows[0]?.n ?? 0;
  }

  /** Number of tasks in each of `states` among `ids` (all tasks when omitted). */
  async countIn(states: readonly string[], ids?: readonly string[]): Promise<number> {
    const params: unknown[] = [states];
    const idFilter = ids === undefined ? '' : ' and id = any($2::bigint[])';
    if (ids !== undefined) params.push(ids);
    const { rows } = await this.pool.query<{ n: number }>(`select count(*)::int as n from ${this.taskTable} t where state = any($1::text[])${idFilter}`, params);
    return rows[0]?.n ?? 0;
  }

  /** Effect rows written before their task's due time (the contract allows none). */
  async effectsBeforeDue(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `select count(*)::int as n from ${this.effectTable} e join ${this.taskTable} t on t.id = e.task_id where e.created_at < t.due_at`,
    );
    return rows[0]?.n ?? 0;
  }

  /** The server's `version()`. */
  async serverVersion(): Promise<string> {
    const { rows } = await this.pool.query<{ v: string }>('select version() as v');
    return rows[0]?.v ?? 'unknown';
  }
}

/** `[state, attempt, <worker>/a<attempt of the result>]`, the form the CASE lines print a task in. */
export function taskSummary(task: TaskView): (string | number)[] {
  const result = task.result ? `${task.result.by ?? '?'}/a${task.result.attempt ?? '?'}` : 'no-result';
  return [task.state, task.attempt, result];
}

/** `<attempt>:<worker>` per effect row. */
export function effectSummary(effects: readonly EffectView[]): string[] {
  return effects.map((e) => `${e.attempt}:${e.worker}`);
}
