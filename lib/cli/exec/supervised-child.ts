import { type ChildProcess, spawn } from 'node:child_process';

/** How a child ended: it ran and exited, or it could not be started. */
export type ChildOutcome =
  { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null } | { kind: 'failed'; error: NodeJS.ErrnoException };

/**
 * A command run by `exec`, with the terminal's stdin, stdout and stderr. It stays in this
 * process's process group, so a Ctrl-C on the terminal reaches it directly too.
 */
export class SupervisedChild {
  /** Settles once when the child exits, or fails to start. */
  readonly done: Promise<ChildOutcome>;
  private readonly child: ChildProcess;
  private running = true;
  private killTimer: NodeJS.Timeout | undefined;

  constructor(command: string, args: readonly string[]) {
    this.child = spawn(command, args, { stdio: 'inherit' });
    this.done = new Promise<ChildOutcome>((resolve) => {
      this.child.on('error', (error: NodeJS.ErrnoException) => {
        // Also emitted when a kill() fails; only a child that never started ends here.
        if (this.child.pid !== undefined) return;
        this.running = false;
        resolve({ kind: 'failed', error });
      });
      this.child.once('exit', (code, signal) => {
        this.running = false;
        clearTimeout(this.killTimer);
        resolve({ kind: 'exited', code, signal });
      });
    });
  }

  /** Process id, once started. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends `signal` to the child if it still runs. */
  signal(signal: NodeJS.Signals): void {
    if (this.running && this.child.pid !== undefined) this.child.kill(signal);
  }

  /** Sends SIGTERM now and SIGKILL after `graceMs` if the child is still running then. */
  terminate(graceMs: number): void {
    this.signal('SIGTERM');
    if (this.killTimer === undefined) this.killTimer = setTimeout(() => this.signal('SIGKILL'), graceMs);
  }
}
