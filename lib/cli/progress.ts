import type { LockInfo } from '../interfaces/lock-info.interface';
import { errorText, WAITING } from './cli.messages';
import type { CliIo } from './io';

/** How often the holder is read again while waiting. */
const POLL_MS = 1_000;
/** A lock taken within this time shows no progress line at all. */
const FIRST_DRAW_MS = 250;

/**
 * The one-line "waiting for lock" indicator on a terminal: who holds the lock and how long
 * this command has waited, redrawn in place. It reads the holder once a second (one
 * strongly consistent read); the caller creates it only when stderr is a terminal and
 * `--quiet` is off.
 */
export class WaitProgress {
  private readonly startedAt = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private holder: LockInfo | null | undefined;
  private problem: string | undefined;
  private reading = false;
  private stopped = false;

  constructor(
    private readonly io: CliIo,
    private readonly name: string,
    private readonly readHolder: () => Promise<LockInfo | null>,
    private readonly pollMs = POLL_MS,
  ) {}

  /** Starts drawing, with the holder as last read (if known). */
  start(holder?: LockInfo | null): void {
    this.holder = holder;
    this.schedule(Math.min(FIRST_DRAW_MS, this.pollMs), false);
  }

  /** Stops and clears the line. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    this.io.status(undefined);
  }

  private schedule(delayMs: number, read: boolean): void {
    this.timer = setTimeout(() => void this.tick(read), delayMs);
    this.timer.unref();
  }

  private async tick(read: boolean): Promise<void> {
    if (this.stopped) return;
    if (read && !this.reading) {
      this.reading = true;
      try {
        this.holder = await this.readHolder();
        this.problem = undefined;
      } catch (error) {
        this.problem = errorText(error);
      } finally {
        this.reading = false;
      }
    }
    if (this.stopped) return;
    this.io.status(WAITING(this.name, performance.now() - this.startedAt, this.holder, this.problem));
    this.schedule(this.pollMs, true);
  }
}
