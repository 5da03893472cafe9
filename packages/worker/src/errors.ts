/**
 * Misuse of a stopped worker: a core `PostponeError`. Why a handler's signal aborted is
 * `TaskAbortedError` (`@postpone/worker`); store and validation errors are core's.
 */
import { PostponeError } from '@postpone/core';

/** `start()` on a worker that was stopped: a worker runs once; create a new one. */
export class WorkerStoppedError extends PostponeError {
  constructor(message = 'this worker was stopped; create a new worker to run again') {
    super('WORKER_STOPPED', message);
    this.name = 'WorkerStoppedError';
  }
}
