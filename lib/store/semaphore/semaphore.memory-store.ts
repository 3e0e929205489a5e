import { randomToken } from '../../utils/random-token';
import type { SemaphoreHolderRecord, SemaphoreRecord } from './semaphore.record';
import type { SemaphoreGrant, SemaphoreStorePort, SemaphoreWriteResult } from './semaphore-store.port';

/**
 * A {@link SemaphoreStorePort} in process memory, for tests: the same items and the same
 * conditional writes as the DynamoDB `DynamoSemaphoreStore`, each applied atomically after a microtask,
 * with no server. A failed write reports the item as it was (as `ALL_OLD` does). It is one of the stores
 * behind a `MemoryLockStore`, so managers sharing a memory store share its semaphores.
 */
export class MemorySemaphoreStore implements SemaphoreStorePort {
  private readonly items = new Map<string, SemaphoreRecord>();

  /** Number of semaphore items kept. */
  get size(): number {
    return this.items.size;
  }

  /** Forgets every item. */
  clear(): void {
    this.items.clear();
  }

  async grant(write: SemaphoreGrant): Promise<SemaphoreWriteResult> {
    const w = structuredClone(write);
    await tick();
    const now = Date.now();
    const holderWith = (fencingToken: number): SemaphoreHolderRecord => ({
      token: w.token,
      owner: w.owner,
      version: randomToken(),
      leaseMs: w.leaseMs,
      fencingToken,
      acquiredAt: now,
      updatedAt: now,
    });
    if (w.create) {
      if (this.items.has(w.key)) return this.failed(w.key);
      const base = now * 1000;
      return this.store({
        key: w.key,
        limit: w.limit,
        count: 1,
        fencingToken: base,
        head: base,
        tail: base,
        gone: [],
        holders: [holderWith(base)],
        updatedAt: now,
      });
    }
    return this.update(w.key, (item) => {
      if (item.limit !== w.limit || item.count >= w.limit) return undefined;
      if (item.holders.some((h) => h.token === w.token)) return undefined;
      let { head, gone } = item;
      if (!w.line) {
        if (item.head !== item.tail) return undefined;
      } else {
        const { ticket, seenHead } = w.line;
        if (item.head !== seenHead || item.tail <= ticket) return undefined;
        for (let t = seenHead; t < ticket; t++) if (!gone.includes(t)) return undefined;
        gone = gone.filter((t) => t < seenHead || t >= ticket);
        head = ticket + 1;
      }
      const fence = item.fencingToken + 1;
      return {
        ...item,
        head,
        gone,
        count: item.count + 1,
        fencingToken: fence,
        holders: [...item.holders, holderWith(fence)],
        updatedAt: now,
      };
    });
  }

  async enqueue(key: string, limit: number, token: string): Promise<SemaphoreWriteResult> {
    await tick();
    return this.update(key, (item) =>
      item.limit !== limit || item.tailToken === token ? undefined : { ...item, tail: item.tail + 1, tailToken: token },
    );
  }

  async abandon(key: string, ticket: number): Promise<SemaphoreWriteResult> {
    await tick();
    return this.update(key, (item) =>
      item.head > ticket || item.tail <= ticket ? undefined : { ...item, gone: [...new Set([...item.gone, ticket])].sort((a, b) => a - b) },
    );
  }

  async passHead(key: string, seenHead: number): Promise<SemaphoreWriteResult> {
    await tick();
    return this.update(key, (item) =>
      item.head !== seenHead || item.count >= item.limit || item.tail <= seenHead
        ? undefined
        : { ...item, head: seenHead + 1, gone: item.gone.filter((t) => t !== seenHead) },
    );
  }

  async heartbeat(key: string, token: string, leaseMs: number | undefined): Promise<SemaphoreWriteResult> {
    await tick();
    return this.update(key, (item) => {
      const now = Date.now();
      if (!item.holders.some((h) => h.token === token)) return undefined;
      const holders = item.holders.map((h) =>
        h.token === token ? { ...h, version: randomToken(), updatedAt: now, leaseMs: leaseMs ?? h.leaseMs } : h,
      );
      return { ...item, holders, updatedAt: now };
    });
  }

  async release(key: string, token: string, _leaseMs: number, heldMs?: number): Promise<boolean> {
    await tick();
    const result = this.update(key, (item) => {
      if (!item.holders.some((h) => h.token === token)) return undefined;
      const lastHoldMs = heldMs === undefined ? item.lastHoldMs : Math.max(0, Math.round(heldMs));
      return {
        ...item,
        holders: item.holders.filter((h) => h.token !== token),
        count: item.count - 1,
        released: token,
        lastHoldMs,
        updatedAt: Date.now(),
      };
    });
    return result.ok || result.current?.released === token;
  }

  async pass(key: string, token: string, seenVersion: string): Promise<SemaphoreWriteResult> {
    await tick();
    return this.update(key, (item) => {
      if (!item.holders.some((h) => h.token === token && h.version === seenVersion)) return undefined;
      return { ...item, holders: item.holders.filter((h) => h.token !== token), count: item.count - 1, updatedAt: Date.now() };
    });
  }

  async read(key: string): Promise<SemaphoreRecord | undefined> {
    await tick();
    const item = this.items.get(key);
    return item && structuredClone(item);
  }

  async *scanHeld(prefix: string): AsyncGenerator<SemaphoreRecord> {
    await tick();
    const held = [...this.items.values()]
      .filter((item) => item.count > 0 && item.key.startsWith(prefix))
      .map((item) => structuredClone(item));
    for (const item of held) yield item;
  }

  /** One conditional write on an existing item: `change` returns the new item, or `undefined` when the condition fails. */
  private update(key: string, change: (item: SemaphoreRecord) => SemaphoreRecord | undefined): SemaphoreWriteResult {
    const before = this.items.get(key);
    const next = before && change(structuredClone(before));
    if (!next) return this.failed(key);
    return this.store(next);
  }

  private store(item: SemaphoreRecord): SemaphoreWriteResult {
    const stored = { ...structuredClone(item), holders: [...item.holders].sort((a, b) => a.fencingToken - b.fencingToken) };
    this.items.set(item.key, stored);
    return { ok: true, record: structuredClone(stored) };
  }

  private failed(key: string): SemaphoreWriteResult {
    const before = this.items.get(key);
    return { ok: false, current: before && structuredClone(before) };
  }
}

/** Lets the caller's code run on before the "server" answers (not a timer: fake timers do not stall it). */
function tick(): Promise<void> {
  return Promise.resolve();
}
