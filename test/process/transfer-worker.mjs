/**
 * A separate OS process moving money between accounts under multi-key locks, through the built
 * library (`dist/`), driven by `test/process/multi-key-transfers.spec.ts`.
 *
 * Configuration: one JSON argument `{ endpoint, table, owner, accounts, durationMs, dataDir,
 * leaseMs, waitForGo }`. Reports: IPC messages `{ type, owner, ... }`.
 *
 * Each account is a file `<dataDir>/account-<i>.json` (`{ balance, token }`). A transfer locks two
 * or three accounts, given in a random order, then for each: creates `<dataDir>/inside-<i>` with
 * `wx` (fails if another process is inside that account: reported as an overlap), checks that its
 * fencing token is above the last one the account saw, reads, sleeps a little, writes, and leaves.
 * Reports `ready`, then `done` with `{ transfers, overlaps, staleTokens }`, or `error` (an acquire
 * that timed out is one: the test counts it as a deadlock).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { config, manager, send } from './support/worker-setup.mjs';

const accountFile = (i) => path.join(config.dataDir, `account-${i}.json`);
const insideFile = (i) => path.join(config.dataDir, `inside-${i}`);
const pick = (n) => Math.floor(Math.random() * n);

/** Two or three distinct accounts, in a random order. */
function randomAccounts() {
  const count = Math.random() < 0.25 ? 3 : 2;
  const chosen = new Set();
  while (chosen.size < count) chosen.add(pick(config.accounts));
  return [...chosen].sort(() => Math.random() - 0.5);
}

async function main() {
  await manager.inspect('account-0').catch(() => undefined);
  const go = new Promise((resolve) => process.once('message', resolve));
  await send('ready');
  if (config.waitForGo) await go;
  const until = performance.now() + config.durationMs;
  let transfers = 0;
  let overlaps = 0;
  let staleTokens = 0;
  while (performance.now() < until) {
    const accounts = randomAccounts();
    const keys = accounts.map((i) => `account-${i}`);
    await manager.withLock(
      keys,
      async (lock) => {
        const entered = [];
        try {
          for (const i of accounts) {
            try {
              writeFileSync(insideFile(i), config.owner, { flag: 'wx' });
              entered.push(i);
            } catch {
              overlaps++;
            }
          }
          const books = accounts.map((i) => JSON.parse(readFileSync(accountFile(i), 'utf8')));
          accounts.forEach((i, n) => {
            if (lock.fencingTokenOf(`account-${i}`) <= books[n].token) staleTokens++;
          });
          await sleep(pick(4));
          // The first account pays the others.
          const amount = 1 + pick(10);
          books[0].balance -= amount * (accounts.length - 1);
          for (let n = 1; n < books.length; n++) books[n].balance += amount;
          lock.signal.throwIfAborted();
          accounts.forEach((i, n) =>
            writeFileSync(accountFile(i), JSON.stringify({ balance: books[n].balance, token: lock.fencingTokenOf(`account-${i}`) })),
          );
        } finally {
          for (const i of entered) rmSync(insideFile(i), { force: true });
        }
      },
      { wait: '60s', leaseDuration: 10_000 },
    );
    transfers++;
  }
  await manager.close();
  await send('done', { transfers, overlaps, staleTokens });
  process.exit(0);
}

main().catch(async (error) => {
  await send('error', { message: String(error?.stack ?? error) });
  process.exit(1);
});
