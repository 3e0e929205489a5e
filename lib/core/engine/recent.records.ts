/** How many items are remembered for a first write without a read. */
const MAX_REMEMBERED = 1_000;

/**
 * The last record seen of each of the most recently used items (at most 1,000, the oldest
 * forgotten first): a caller's first write can then be sent without a read.
 */
export class RecentRecords<T extends { readonly key: string }> {
  private readonly records = new Map<string, T>();

  /** The last record seen of `key`, if it is still remembered. */
  get(key: string): T | undefined {
    return this.records.get(key);
  }

  /** Remembers `record` as its item's newest, forgetting the least recently seen item when full. */
  remember(record: T): void {
    this.records.delete(record.key);
    this.records.set(record.key, record);
    if (this.records.size > MAX_REMEMBERED) this.records.delete(this.records.keys().next().value as string);
  }
}
