/**
 * A separate OS process taking read and write locks of one key through the built library
 * (`dist/`), driven by `test/process/read-write-processes.spec.ts`.
 *
 * Configuration: one JSON argument `{ endpoint, table, key, owner, role ('read' | 'write'), mode,
 * leaseMs, readers, turns, sectionMs, insideDir }`. Reports: IPC messages `{ type, owner, ... }`.
 *
 * Who is inside is counted without comparing clocks: entering, a holder creates its own file in
 * `insideDir` (`r-…` for a reader, `w-…` for a writer), then lists the files there; it removes its
 * file when it leaves. A writer that ever found another file, or a reader a writer's, reports it.
 *
 * Modes:
 * - `loop`: (reports `ready`, waits for any message) `turns` times: acquire (waiting) → section of
 *   `sectionMs` → release; reports `turn` with the fencing token, the readers and writers it found
 *   inside, then `done`.
 * - `hold`: takes `readers` locks of its role (default 1) at once, reports `acquired` with their
 *   fencing tokens, and holds them (heartbeats on) until told `release`; then reports `released`.
 */
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { config, manager, send } from './support/worker-setup.mjs';

const options = { mode: config.role, leaseDuration: config.leaseMs, wait: '120s' };

/** Enters the section: its file, then what else is inside. */
function enter(name) {
  writeFileSync(path.join(config.insideDir, name), '');
  const others = readdirSync(config.insideDir).filter((file) => file !== name);
  return { readers: others.filter((f) => f.startsWith('r-')).length, writers: others.filter((f) => f.startsWith('w-')).length };
}

async function loop() {
  await manager.inspect(config.key).catch(() => undefined);
  const go = new Promise((resolve) => process.once('message', resolve));
  await send('ready');
  await go;
  for (let turn = 0; turn < config.turns; turn++) {
    await manager.withLock(
      config.key,
      async (lock) => {
        const name = `${config.role === 'read' ? 'r' : 'w'}-${config.owner}`;
        const inside = enter(name);
        await sleep(config.sectionMs);
        lock.signal.throwIfAborted();
        rmSync(path.join(config.insideDir, name));
        await send('turn', { fencingToken: lock.fencingToken, ...inside });
      },
      options,
    );
    await sleep(Math.random() * 20);
  }
  await manager.close();
  await send('done');
  process.exit(0);
}

async function hold() {
  const locks = await Promise.all(Array.from({ length: config.readers ?? 1 }, () => manager.acquire(config.key, options)));
  for (const lock of locks) lock.signal.addEventListener('abort', () => void send('lost', { reason: lock.signal.reason?.reason }));
  await send('acquired', { fencingTokens: locks.map((lock) => lock.fencingToken) });
  await new Promise((resolve) => process.once('message', resolve));
  await Promise.all(locks.map((lock) => lock.release()));
  await send('released');
  await new Promise(() => undefined);
}

const modes = { hold, loop };
modes[config.mode]().catch(async (error) => {
  await send('error', { message: String(error?.stack ?? error) });
  process.exit(1);
});
