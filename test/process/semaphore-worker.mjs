/**
 * A separate OS process holding slots of a counting semaphore through the built library
 * (`dist/`), driven by `test/process/semaphore-processes.spec.ts`.
 *
 * Configuration: one JSON argument `{ endpoint, table, key, owner, limit, leaseMs, mode, turns,
 * sectionMs, insideDir }`. Reports: IPC messages `{ type, owner, ... }`.
 *
 * Who is inside is counted without comparing clocks: entering, a process creates its own file in
 * `insideDir`, then counts the files there; it removes its file when it leaves. If more than
 * `limit` sections ever overlapped, the last of them to enter counts them all.
 *
 * Modes:
 * - `loop`: (with `waitForGo`: reports `ready` and waits for any message) `turns` times: acquire (waiting) → section of `sectionMs` → release; reports `turn`
 *   with the fencing token and how many were inside, then `done`.
 * - `hold`: acquires once, reports `acquired`, and holds (heartbeats on) until killed; reports
 *   `lost` if its signal aborts.
 * - `guard`: as `hold`, and acts every 25 ms while the slot is valid (`lock.isHeld`), as a holder
 *   would before each write. The first check after a gap of more than `leaseMs` between two checks
 *   (the process was paused) reports `woke` with whether the slot still read as valid then
 *   (`actedStale`: it would have written as a holder after its lease ran out) and the signal's state.
 *
 * With `CLOCK_SKEW_MS` and `--require test/support/clock-skew.cjs`, the wall clock is off by that much.
 */
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { config, manager, send } from './support/worker-setup.mjs';
const options = { limit: config.limit, leaseDuration: config.leaseMs, wait: '120s' };

async function loop() {
  if (config.waitForGo) {
    // Warmed up (SDK loaded, connection open), then all start together on the parent's word.
    await manager.inspect(config.key).catch(() => undefined);
    const go = new Promise((resolve) => process.once('message', resolve));
    await send('ready', {
      skewMs: globalThis.__clockSkewMs ?? 0,
      wallMinusReal: Date.now() - new Date(performance.timeOrigin + performance.now()).getTime(),
    });
    await go;
  }
  const mine = path.join(config.insideDir, `${config.owner}`);
  for (let turn = 0; turn < config.turns; turn++) {
    await manager.withLock(
      config.key,
      async (lock) => {
        writeFileSync(mine, '');
        const inside = readdirSync(config.insideDir).length;
        await sleep(config.sectionMs);
        lock.signal.throwIfAborted();
        rmSync(mine);
        await send('turn', { fencingToken: lock.fencingToken, inside });
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
  const lock = await manager.acquire(config.key, options);
  lock.signal.addEventListener('abort', () => void send('lost', { reason: lock.signal.reason?.reason }));
  await send('acquired', { fencingToken: lock.fencingToken });
  await new Promise(() => undefined);
}

async function guard() {
  const lock = await manager.acquire(config.key, options);
  lock.signal.addEventListener('abort', () => void send('lost', { reason: lock.signal.reason?.reason }));
  await send('acquired', { fencingToken: lock.fencingToken });
  let last = performance.now();
  let woke = false;
  setInterval(() => {
    const now = performance.now();
    const valid = lock.isHeld;
    if (!woke && now - last > config.leaseMs) {
      woke = true;
      void send('woke', { pausedMs: now - last, actedStale: valid, aborted: lock.signal.aborted });
    }
    last = now;
  }, 25);
}

const modes = { hold, guard, loop };
modes[config.mode]().catch(async (error) => {
  await send('error', { message: String(error?.stack ?? error) });
  process.exit(1);
});
