/**
 * A binary min-heap of items by a time (any number): the earliest is at the top. Adding, taking the
 * earliest, and moving or removing an item at a known position each cost O(log n), so work per
 * operation does not grow with the number of items. Times live in an array beside the items (no
 * wrapper object per entry). With `moved`, the heap tells each item its position whenever it
 * changes (`-1` once it left), for {@link update} and {@link removeAt}.
 */
export class TimeHeap<T> {
  private readonly times: number[] = [];
  private readonly items: T[] = [];

  constructor(private readonly moved?: (item: T, index: number) => void) {}

  /** Number of items. */
  get size(): number {
    return this.items.length;
  }

  /** The earliest time, or `Infinity` when empty. */
  peekTime(): number {
    return this.items.length === 0 ? Number.POSITIVE_INFINITY : this.times[0];
  }

  /** The item with the earliest time, if any. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** The item at a position (0 ≤ index < size), in no particular order: for a rare walk over all. */
  at(index: number): T {
    return this.items[index];
  }

  /** Adds an item at `time`. */
  push(item: T, time: number): void {
    this.items.push(item);
    this.times.push(time);
    this.up(this.items.length - 1);
  }

  /** Takes the item with the earliest time out. */
  pop(): T | undefined {
    return this.items.length === 0 ? undefined : this.removeAt(0);
  }

  /** Takes out the item at `index` (as `moved` told it). */
  removeAt(index: number): T {
    const item = this.items[index];
    const lastItem = this.items.pop() as T;
    const lastTime = this.times.pop() as number;
    if (index < this.items.length) {
      this.items[index] = lastItem;
      this.times[index] = lastTime;
      this.moved?.(lastItem, index);
      this.down(index);
      this.up(index);
    }
    this.moved?.(item, -1);
    return item;
  }

  /** Gives the item at `index` a new time. */
  update(index: number, time: number): void {
    const before = this.times[index];
    this.times[index] = time;
    if (time < before) this.up(index);
    else this.down(index);
  }

  /** Empties the heap. */
  clear(): void {
    for (const item of this.items) this.moved?.(item, -1);
    this.items.length = 0;
    this.times.length = 0;
  }

  private up(index: number): void {
    const { items, times } = this;
    const item = items[index];
    const time = times[index];
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (times[parent] <= time) break;
      items[index] = items[parent];
      times[index] = times[parent];
      this.moved?.(items[index], index);
      index = parent;
    }
    items[index] = item;
    times[index] = time;
    this.moved?.(item, index);
  }

  private down(index: number): void {
    const { items, times } = this;
    const length = items.length;
    const item = items[index];
    const time = times[index];
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && times[right] < times[left] ? right : left;
      if (times[child] >= time) break;
      items[index] = items[child];
      times[index] = times[child];
      this.moved?.(items[index], index);
      index = child;
    }
    items[index] = item;
    times[index] = time;
    this.moved?.(item, index);
  }
}
