/**
 * `@WithLock(template, { mode: 'read' })` in a Nest application on `DynamoLockModule.forTesting()`
 * (the memory store, no server): reads of a catalogue run together across two application
 * instances sharing one store, its rebuild (a method without `mode`) runs alone; a bad mode, or
 * data with `mode: 'read'`, fails when the class is defined.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoLockModule, LockService, LockValidationError, MemoryLockStore, WithLock } from '../../lib';

let readers = 0;
let writers = 0;
let mostReaders = 0;
const clashes: string[] = [];

@Injectable()
class CatalogService {
  constructor(readonly locks: LockService) {}

  @WithLock('catalog-<0>', { mode: 'read', wait: '20s' })
  async read(name: string): Promise<number> {
    if (writers > 0) clashes.push(`read of ${name} with a rebuild`);
    mostReaders = Math.max(mostReaders, ++readers);
    await sleep(30);
    readers--;
    return this.locks.current()!.fencingToken;
  }

  @WithLock('catalog-<0>', { wait: '20s' })
  async rebuild(name: string): Promise<number> {
    if (readers > 0 || writers > 0) clashes.push(`rebuild of ${name} with ${readers} reads, ${writers} rebuilds`);
    writers++;
    await sleep(30);
    writers--;
    return this.locks.current()!.fencingToken;
  }
}

describe("@WithLock with mode: 'read' (forTesting)", () => {
  const store = new MemoryLockStore();
  const apps: TestingModule[] = [];
  let services: CatalogService[];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      apps.push(
        await Test.createTestingModule({
          imports: [DynamoLockModule.forTesting({ store, ownerName: `app-${i}`, maxPollInterval: 100 })],
          providers: [CatalogService],
        }).compile(),
      );
    }
    services = apps.map((app) => app.get(CatalogService));
  });
  afterAll(() => Promise.all(apps.map((app) => app.close())));

  it('reads run together across instances; a rebuild runs alone, and its token orders it among the reads', async () => {
    const reads = services.flatMap((service) => Array.from({ length: 4 }, () => service.read('books')));
    await sleep(5);
    const rebuild = services[0]!.rebuild('books');
    // Once the rebuild waits in line, a single read attempt is refused: reads after it wait for it.
    for (;;) {
      const probe = await services[1]!.locks.tryAcquire('catalog-books', { mode: 'read' });
      if (probe === null) break;
      await probe.release();
      await sleep(2);
    }
    const later = services[1]!.read('books');
    const [readTokens, rebuildToken, laterToken] = await Promise.all([Promise.all(reads), rebuild, later]);
    expect(clashes).toEqual([]);
    expect(mostReaders).toBeGreaterThanOrEqual(2);
    expect(rebuildToken).toBeGreaterThan(Math.max(...readTokens));
    expect(laterToken).toBeGreaterThan(rebuildToken);
  });

  it('a bad mode, or data with a read lock, fails when the class is defined, naming the method', () => {
    const define = (options: Record<string, unknown>) => {
      class Bad {
        @WithLock('x', options)
        async run(): Promise<void> {}
      }
      return Bad;
    };
    expect(() => define({ mode: 'shared' })).toThrow(LockValidationError);
    expect(() => define({ mode: 'shared' })).toThrow(/@WithLock on Bad\.run: mode must be "read", "upgradeable" or "write", got "shared"/);
    expect(() => define({ mode: 'read', data: { a: 1 } })).toThrow(/"data" cannot be used with mode: "read"/);
    expect(() => define({ mode: 'read', limit: 2 })).toThrow(/"limit" cannot be used with mode: "read"/);
  });
});
