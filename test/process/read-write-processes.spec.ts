/**
 * Read locks and writers across OS processes, against the real servers: every caller is a separate
 * Node process (`read-write-worker.mjs`, on the built `dist/`), sharing nothing but DynamoDB and
 * the file system. Overlap is counted (files in a directory), not timed; a killed reader is dropped
 * "after about a lease" versus "at once" or "never".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';
import { type WorkerReport, workerPool } from './support/worker-process';

interface Report extends WorkerReport {
  at: number;
  fencingToken?: number;
  fencingTokens?: number[];
  readers?: number;
  writers?: number;
  reason?: string;
}

const { start } = workerPool<Report>('read-write-worker.mjs');

describeEachServer('read locks across processes', { shortRunOn: 'dynalite' }, (server) => {
  let fixture: LockFixture;
  let dir: string;
  beforeAll(async () => {
    fixture = await new LockFixture(server).setup();
    dir = mkdtempSync(path.join(tmpdir(), 'read-write-'));
  });
  afterAll(async () => {
    await fixture.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('5 reader processes and 2 writer processes: readers overlap, no writer overlaps anyone, every process gets all its turns', async () => {
    const insideDir = mkdtempSync(path.join(dir, 'inside-'));
    const base = { key: 'mixed', leaseMs: 10_000, mode: 'loop', insideDir };
    const readers = Array.from({ length: 5 }, (_, i) =>
      start(server, fixture.tableName, { ...base, owner: `reader${i}`, role: 'read', turns: 5, sectionMs: 150 }),
    );
    const writers = Array.from({ length: 2 }, (_, i) =>
      start(server, fixture.tableName, { ...base, owner: `writer${i}`, role: 'write', turns: 3, sectionMs: 50 }),
    );
    const all = [...readers, ...writers];
    await Promise.all(all.map((w) => w.next('ready', 60_000)));
    for (const worker of all) worker.child.send('go');
    await Promise.all(all.map((w) => w.next('done', 120_000)));
    const turnsOf = (w: (typeof all)[number]) => w.reports.filter((r) => r.type === 'turn');
    expect(all.map((w) => turnsOf(w).length)).toEqual([5, 5, 5, 5, 5, 3, 3]);
    const writerTurns = writers.flatMap(turnsOf);
    const readerTurns = readers.flatMap(turnsOf);
    expect(writerTurns.filter((t) => t.readers! + t.writers! > 0)).toEqual([]);
    expect(readerTurns.filter((t) => t.writers! > 0)).toEqual([]);
    expect(Math.max(...readerTurns.map((t) => t.readers!))).toBeGreaterThanOrEqual(1);
    // Writers' tokens are unique and above the readers' of the groups before them.
    expect(new Set(writerTurns.map((t) => t.fencingToken)).size).toBe(6);
  }, 180_000);

  it('a writer waiting behind 20 readers (5 processes) gets in once they leave, and a reader arriving after it enters only after its release', async () => {
    const insideDir = mkdtempSync(path.join(dir, 'inside-'));
    const holders = Array.from({ length: 5 }, (_, i) =>
      start(server, fixture.tableName, { key: 'twenty', leaseMs: 10_000, mode: 'hold', role: 'read', readers: 4, owner: `holder${i}` }),
    );
    const held = await Promise.all(holders.map((w) => w.next('acquired', 60_000)));
    const probe = fixture.manager();
    expect((await probe.inspect('twenty'))?.holders).toHaveLength(20);
    const base = { key: 'twenty', leaseMs: 10_000, mode: 'loop', turns: 1, sectionMs: 300, insideDir };
    const writer = start(server, fixture.tableName, { ...base, owner: 'writer', role: 'write' });
    await writer.next('ready', 60_000);
    writer.child.send('go');
    // The writer is in line once a single attempt of a new reader is refused.
    const started = performance.now();
    for (;;) {
      const reader = await probe.tryAcquire('twenty', { mode: 'read' });
      if (reader === null) break;
      await reader.release();
      if (performance.now() - started > 30_000) throw new Error('the writer never queued');
      await new Promise((r) => setTimeout(r, 50));
    }
    const late = start(server, fixture.tableName, { ...base, owner: 'late', role: 'read' });
    await late.next('ready', 60_000);
    late.child.send('go');
    await new Promise((r) => setTimeout(r, 500));
    expect(writer.reports.some((r) => r.type === 'turn')).toBe(false);
    expect(late.reports.some((r) => r.type === 'turn')).toBe(false);
    for (const holder of holders) holder.child.send('release');
    await Promise.all(holders.map((w) => w.next('released', 30_000)));
    const written = await writer.next('turn', 30_000);
    const read = await late.next('turn', 30_000);
    expect(read.receivedAt).toBeGreaterThan(written.receivedAt);
    expect(read.writers).toBe(0);
    expect(written.readers! + written.writers!).toBe(0);
    expect(written.fencingToken).toBeGreaterThan(Math.max(...held.flatMap((h) => h.fencingTokens!)));
    expect(read.fencingToken).toBeGreaterThan(written.fencingToken!);
  }, 180_000);

  it('a reader SIGKILLed holds writers back about one lease once the live readers left, not for ever', async () => {
    const leaseMs = 2_000;
    const insideDir = mkdtempSync(path.join(dir, 'inside-'));
    const victim = start(server, fixture.tableName, { key: 'killed-reader', leaseMs, mode: 'hold', role: 'read', owner: 'victim' });
    await victim.next('acquired', 60_000);
    const keeper = start(server, fixture.tableName, { key: 'killed-reader', leaseMs, mode: 'hold', role: 'read', owner: 'keeper' });
    await keeper.next('acquired', 60_000);
    const writer = start(server, fixture.tableName, {
      key: 'killed-reader',
      leaseMs,
      mode: 'loop',
      role: 'write',
      turns: 1,
      sectionMs: 10,
      insideDir,
      owner: 'writer',
    });
    await writer.next('ready', 60_000);
    writer.child.send('go');
    const probe = fixture.manager();
    const started = performance.now();
    for (;;) {
      // With the same lease: a group's lease is the longest any of its readers asked for.
      const reader = await probe.tryAcquire('killed-reader', { mode: 'read', leaseDuration: leaseMs });
      if (reader === null) break;
      await reader.release();
      if (performance.now() - started > 30_000) throw new Error('the writer never queued');
      await new Promise((r) => setTimeout(r, 50));
    }
    victim.child.kill('SIGKILL');
    const killedAt = performance.now();
    keeper.child.send('release');
    await keeper.next('released', 30_000);
    const turn = await writer.next('turn', 30_000);
    const tookMs = turn.receivedAt - killedAt;
    // The group's version moved last at the keeper's heartbeat or the victim's, at most a third of
    // a lease before the kill; the writer waits a whole lease after it saw that version.
    expect(tookMs).toBeGreaterThanOrEqual(leaseMs - leaseMs / 3 - 100);
    expect(tookMs).toBeLessThan(leaseMs + 8_000);
    expect(turn.readers! + turn.writers!).toBe(0);
  }, 120_000);
});
