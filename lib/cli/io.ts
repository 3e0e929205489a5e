/** A stream the CLI writes text to: `process.stdout`, `process.stderr`, or a test double. */
export interface TextSink {
  write(text: string, callback?: (error?: Error | null) => void): boolean;
  readonly isTTY?: boolean;
  /** Terminal width, when a terminal. */
  readonly columns?: number;
}

const CLEAR_LINE = '\r\x1b[K';

/**
 * The CLI's output: data on stdout; messages on stderr, one line each; and on a terminal,
 * one redrawn status line on stderr that messages never get mixed into.
 */
export class CliIo {
  private statusText: string | undefined;

  constructor(
    private readonly stdout: TextSink,
    private readonly stderr: TextSink,
  ) {}

  /** The process's own streams. */
  static fromProcess(): CliIo {
    return new CliIo(process.stdout, process.stderr);
  }

  /** Whether stdout is a terminal (a person reads it, not a program). */
  get stdoutIsTTY(): boolean {
    return this.stdout.isTTY === true;
  }

  /** Whether stderr is a terminal, so a status line can be redrawn in place. */
  get stderrIsTTY(): boolean {
    return this.stderr.isTTY === true;
  }

  /** Width of the terminal stdout is on, when it is one. */
  get stdoutColumns(): number | undefined {
    return this.stdoutIsTTY && this.stdout.columns ? this.stdout.columns : undefined;
  }

  /** Writes `text` to stdout as is. */
  out(text: string): void {
    this.stdout.write(text);
  }

  /** Writes one line to stderr (the status line, if any, is moved below it). */
  err(line: string): void {
    this.errText(`${line}\n`);
  }

  /** Writes `text` to stderr as is (commander's help and errors), keeping the status line intact. */
  errText(text: string): void {
    const status = this.statusText;
    if (status !== undefined) this.stderr.write(CLEAR_LINE);
    this.stderr.write(text);
    if (status !== undefined) this.stderr.write(this.fit(status));
  }

  /** Shows `text` as the status line on a terminal (replacing the last one); `undefined` clears it. */
  status(text: string | undefined): void {
    if (!this.stderrIsTTY) return;
    if (text === undefined) {
      if (this.statusText !== undefined) this.stderr.write(CLEAR_LINE);
    } else {
      this.stderr.write(CLEAR_LINE + this.fit(text));
    }
    this.statusText = text;
  }

  /** Resolves once everything written so far has been handed to the operating system. */
  async flush(): Promise<void> {
    await Promise.all([this.stdout, this.stderr].map((sink) => new Promise<void>((resolve) => sink.write('', () => resolve()))));
  }

  /** Cuts a status line to the terminal width, so redrawing it with `\r` works. */
  private fit(text: string): string {
    const width = this.stderr.columns;
    return width && text.length >= width ? `${text.slice(0, Math.max(0, width - 2))}…` : text;
  }
}
