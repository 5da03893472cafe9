/**
 * The child's end of the IPC channel: send events to the test, receive controls from it, park at a
 * fault point until the test says `proceed`. The child exits when the test goes away.
 */
import { CONFIG_ENV, type ChildConfig, type ChildControl, type ChildEvent, type FaultPoint } from './protocol.js';

type Proceed = Extract<ChildControl, { type: 'proceed' }>;

interface Parked {
  readonly id: string;
  readonly point: FaultPoint;
  readonly release: () => void;
}

export class ParentChannel {
  private readonly parked = new Set<Parked>();
  /** `proceed` messages that matched no parked handler: the next matching `park` returns at once. */
  private readonly early: Proceed[] = [];
  private readonly listeners = new Set<(control: ChildControl) => void>();

  constructor() {
    if (!process.send) throw new Error('the harness child must be started with an IPC channel (child_process.fork)');
    process.on('message', (message: ChildControl) => this.dispatch(message));
    // The test runner went away: nothing can observe this process any more.
    process.on('disconnect', () => process.exit(70));
  }

  /** Reads the JSON configuration from the environment. @throws Error when missing or not JSON */
  static config(): ChildConfig {
    const text = process.env[CONFIG_ENV];
    if (!text) throw new Error(`${CONFIG_ENV} is not set`);
    return JSON.parse(text) as ChildConfig;
  }

  /** Sends one event; resolves once it is handed to the channel (or the channel is gone). */
  emit(event: ChildEvent): Promise<void> {
    return new Promise((resolve) => {
      if (!process.connected || !process.send) {
        resolve();
        return;
      }
      process.send(event, undefined, {}, () => resolve());
    });
  }

  /** Calls `listener` for every control message except `proceed` (which `park` consumes). */
  onControl(listener: (control: ChildControl) => void): void {
    this.listeners.add(listener);
  }

  /** Reports `parked` and waits until the test sends a matching `proceed`. */
  async park(id: string, attempt: number, point: FaultPoint): Promise<void> {
    const early = this.early.findIndex((p) => matches(p, id, point));
    if (early >= 0) {
      this.early.splice(early, 1);
      return;
    }
    const released = new Promise<void>((resolve) => {
      const entry: Parked = { id, point, release: () => resolve() };
      this.parked.add(entry);
    });
    await this.emit({ type: 'parked', id, attempt, point });
    await released;
  }

  private dispatch(control: ChildControl): void {
    if (control.type === 'proceed') {
      const target = [...this.parked].find((p) => matches(control, p.id, p.point));
      if (target) {
        this.parked.delete(target);
        target.release();
      } else {
        this.early.push(control);
      }
      return;
    }
    for (const listener of [...this.listeners]) listener(control);
  }
}

function matches(proceed: Proceed, id: string, point: FaultPoint): boolean {
  return (proceed.id === undefined || proceed.id === id) && (proceed.point === undefined || proceed.point === point);
}
