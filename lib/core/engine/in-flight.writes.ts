/**
 * The writes a primitive started and shutdown must wait for (releases, passes of dead entries):
 * each counts until it settles, whatever its outcome.
 */
export class InFlightWrites {
  private readonly writes = new Set<Promise<unknown>>();

  /** Counts `write` as in flight until it settles; returns it unchanged. */
  track<T>(write: Promise<T>): Promise<T> {
    this.writes.add(write);
    void write.catch(() => undefined).finally(() => this.writes.delete(write));
    return write;
  }

  /** Resolves once every write started so far (and every one they started) has settled. */
  async idle(): Promise<void> {
    while (this.writes.size > 0) await Promise.allSettled([...this.writes]);
  }
}
