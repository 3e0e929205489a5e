// @ts-check
/**
 * The chaos harness's child processes: the worker processes (spawned, respawned, SIGKILLed,
 * SIGSTOPped and SIGCONTed, closed) and the fault proxy (started and driven over IPC). Every child
 * is SIGKILLed if the harness exits first (a stopped process would not notice its parent is gone).
 * What the workers say goes to the referee (`checks.mjs`); the supervisor only keeps their state.
 */
import { fork } from 'node:child_process';
import { readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ATTR } from '../dist/store/mutex/mutex.record.js';
import { killOnExit } from '../tools/exit-guard.mjs';

/** @typedef {import('./protocol.mjs').WorkerConfig} WorkerConfig */
/** @typedef {import('./protocol.mjs').WorkerCommand} WorkerCommand */
/** @typedef {import('./protocol.mjs').WorkerMessage} WorkerMessage */
/** @typedef {import('./protocol.mjs').WorkerReply} WorkerReply */
/** @typedef {import('./protocol.mjs').SdkVariant} SdkVariant */
/** @typedef {import('./protocol.mjs').ProxyCommand} ProxyCommand */
/** @typedef {import('./protocol.mjs').ProxyReply} ProxyReply */
/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */

/**
 * A worker slot: its incarnations share the clock skew and the SDK settings.
 * @typedef {{ slot: number, gen: number, skewMs: number, sdk: SdkVariant }} Slot
 */

/**
 * One SIGSTOP of a worker; `contAt` once it got SIGCONT (`performance.now()` times).
 * @typedef {{ stopAt: number, contAt: number | undefined, ms: number, holding: boolean }} Stop
 */

/**
 * A pause in progress: `resume()` ends it early; `done` settles when it ends.
 * @typedef {{ done: Promise<void>, resume: () => void, handle?: NodeJS.Timeout }} PauseTimer
 */

/**
 * One worker process as the harness knows it (`pseudo`: the liveness phase's prober, in the harness).
 * @typedef {object} WorkerHandle
 * @property {string} owner
 * @property {number} slot
 * @property {number} [skewMs]
 * @property {{ send(message: WorkerCommand | WorkerReply): unknown, kill?: (signal: NodeJS.Signals) => unknown }} child
 * @property {boolean} alive
 * @property {boolean} [stopped]
 * @property {Stop[]} stops
 * @property {string} [output] the end of its stdout and stderr
 * @property {boolean} [closed]
 * @property {boolean} [killedByHarness]
 * @property {boolean} [pseudo]
 * @property {boolean} [isReady]
 * @property {Promise<void>} [ready]
 * @property {() => void} [readyResolve]
 * @property {Promise<{ code: number | null, signal: NodeJS.Signals | null }>} [exited]
 * @property {number} [exitedAt]
 * @property {{ code: number | null, signal: NodeJS.Signals | null }} [exit]
 * @property {string} [crash]
 * @property {import('./protocol.mjs').HoldingMessage} [holding]
 * @property {(message: import('./protocol.mjs').HoldingMessage) => void} [holdingResolve]
 * @property {import('./protocol.mjs').IdleMessage} [idle]
 * @property {(message: import('./protocol.mjs').IdleMessage) => void} [idleResolve]
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const WORKER = path.join(here, 'worker.mjs');
const PROXY = path.join(here, 'support', 'fault-proxy.mjs');
const SKEW_PRELOAD = path.join(here, '..', 'test', 'support', 'clock-skew.cjs');

const now = () => performance.now();

export class Supervisor {
  /**
   * @param {ChaosRun} run
   * @param {{ onMessage(w: WorkerHandle, m: WorkerMessage): void, onExit(w: WorkerHandle): void }} hooks
   *   where the workers' messages and deaths go
   */
  constructor(run, hooks) {
    this.run = run;
    this.hooks = hooks;
    /** @type {Map<string, WorkerHandle>} */
    this.workers = new Map();
    /** @type {Slot[]} */
    this.slots = [];
    /** @type {Set<PauseTimer>} */
    this.pauseTimers = new Set();
    /** @type {Set<Promise<void>>} */
    this.respawns = new Set();
    /** @type {import('node:child_process').ChildProcess | undefined} */
    this.proxy = undefined;
    /** @type {Map<number, (reply: ProxyReply) => void>} */
    this.proxyPending = new Map();
    this.proxyId = 0;
    /** The fault proxy's endpoint, once started. */
    this.proxyEndpoint = '';
  }

  // ---- workers ----

  /** Spawns one worker per slot (`skews[slot]` shifts its clock) and waits until each is ready. */
  async startWorkers() {
    const { o } = this.run;
    for (let slot = 0; slot < o.workers; slot++) this.slots.push({ slot, gen: 0, skewMs: o.skews[slot] ?? 0, sdk: sdkVariant(slot) });
    const started = this.slots.map((slot) => this.spawn(slot, false));
    await Promise.all(started.map((w) => w.ready));
    return started;
  }

  /**
   * @param {Slot} slot
   * @param {boolean} autoGo
   */
  spawn(slot, autoGo) {
    const { o, table, keys, dir, tally } = this.run;
    const owner = `w${slot.slot}g${slot.gen}`;
    /** @type {WorkerConfig} */
    const config = {
      owner,
      endpoint: this.proxyEndpoint,
      table,
      keys,
      leaseMs: o.leaseMs,
      waitMs: o.waitMs,
      tasks: o.tasks,
      holdMinMs: 100,
      holdMaxMs: 500,
      maxWrites: 3,
      uncheckedRate: 0.3,
      idleMaxMs: 150,
      markerDir: dir,
      sdk: slot.sdk,
      autoGo,
      dataTable: this.run.dataTable,
      transactRate: this.run.data.transactions ? 0.3 : 0,
      stallRate: 0.15,
    };
    const execArgv = slot.skewMs === 0 ? [] : ['--require', SKEW_PRELOAD];
    const child = fork(WORKER, [JSON.stringify(config)], {
      execArgv,
      env: { ...process.env, CLOCK_SKEW_MS: String(slot.skewMs), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    // SIGKILL also ends a stopped process, which would not notice its parent is gone.
    const forget = killOnExit(() => child.kill('SIGKILL'));
    child.once('exit', forget);
    /** @type {WorkerHandle} */
    const w = {
      owner,
      slot: slot.slot,
      skewMs: slot.skewMs,
      child,
      alive: true,
      stopped: false,
      stops: [],
      output: '',
      closed: false,
      killedByHarness: false,
    };
    /** @type {() => void} */
    let readyResolve = () => undefined;
    w.ready = new Promise((resolve) => (readyResolve = resolve));
    w.readyResolve = readyResolve;
    w.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const collect = (/** @type {Buffer} */ chunk) => (w.output = ((w.output ?? '') + chunk).slice(-4_000));
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    child.on('message', (message) => this.hooks.onMessage(w, /** @type {WorkerMessage} */ (message)));
    child.once('exit', (code, signal) => this.onExit(w, code, signal));
    child.on('error', () => undefined);
    this.workers.set(owner, w);
    (tally.counts.bySlot[slot.slot] ??= { skewMs: slot.skewMs, acquisitions: 0, incarnations: 0 }).incarnations++;
    return w;
  }

  /** Workers alive and not (being) killed by the harness. */
  liveWorkers() {
    return [...this.workers.values()].filter((w) => w.alive && !w.killedByHarness && !w.pseudo);
  }

  /** @param {WorkerHandle} w */
  kill(w) {
    w.killedByHarness = true;
    try {
      w.child.kill?.('SIGKILL');
    } catch {
      // gone already
    }
  }

  /**
   * A new incarnation of `w`'s slot, a moment after it was killed — while the chaos lasts.
   * @param {WorkerHandle} w
   */
  respawnLater(w) {
    const { random, tally } = this.run;
    const slot = this.slots[w.slot];
    const respawn = (async () => {
      await sleep(200 + 600 * random());
      if (this.run.phase !== 'chaos' && this.run.phase !== 'wind-down') return;
      slot.gen++;
      tally.counts.respawns++;
      const next = this.spawn(slot, true);
      await Promise.race([next.ready, next.exited]);
    })();
    this.respawns.add(respawn);
    void respawn.finally(() => this.respawns.delete(respawn));
  }

  /**
   * SIGSTOP for `ms`, then SIGCONT.
   * @param {WorkerHandle} w
   * @param {number} ms
   * @param {boolean} holding
   * @returns {PauseTimer | undefined}
   */
  pause(w, ms, holding) {
    const { tally } = this.run;
    /** @type {Stop} */
    const stop = { stopAt: now(), contAt: undefined, ms, holding };
    try {
      w.child.kill?.('SIGSTOP');
    } catch {
      return undefined;
    }
    w.stopped = true;
    w.stops.push(stop);
    tally.counts.pauses++;
    if (holding) tally.counts.pausesOfHolders++;
    /** @type {() => void} */
    let done = () => undefined;
    /** @type {PauseTimer} */
    const timer = {
      done: new Promise((resolve) => (done = resolve)),
      resume: () => {
        clearTimeout(timer.handle);
        this.pauseTimers.delete(timer);
        if (w.alive) {
          try {
            w.child.kill?.('SIGCONT');
          } catch {
            // gone
          }
        }
        stop.contAt = now();
        w.stopped = false;
        done();
      },
    };
    if (Number.isFinite(ms)) timer.handle = setTimeout(timer.resume, ms);
    this.pauseTimers.add(timer);
    return timer;
  }

  /**
   * The stop of `owner` whose interval meets [from, to], if any.
   * @param {string} owner
   * @param {number} from
   * @param {number} to
   */
  pausedDuring(owner, from, to) {
    const w = this.workers.get(owner);
    return w?.stops.find((stop) => stop.stopAt <= to && (stop.contAt ?? Number.POSITIVE_INFINITY) >= from);
  }

  /**
   * @param {WorkerHandle} w
   * @param {number | null} code
   * @param {NodeJS.Signals | null} signal
   */
  onExit(w, code, signal) {
    const { keys, dir, tally } = this.run;
    w.alive = false;
    w.exitedAt = now();
    w.exit = { code, signal };
    w.readyResolve?.();
    this.hooks.onExit(w);
    // Its marker files: nobody else removes them.
    for (let i = 0; i < keys.length; i++) {
      const marker = path.join(dir, `${i}.inside`);
      try {
        if (readFileSync(marker, 'utf8').split(' ')[0] === w.owner) unlinkSync(marker);
      } catch {
        // none
      }
    }
    if (!w.killedByHarness && !w.closed) {
      tally.violation('workerCrashes', { owner: w.owner, code, signal, output: (w.output ?? '').slice(-1_500), crash: w.crash });
    }
  }

  /**
   * @param {WorkerHandle} w
   * @param {WorkerCommand} command
   */
  send(w, command) {
    w.child.send(command);
  }

  /**
   * Answers a worker's request.
   * @param {WorkerHandle} w
   * @param {number} id
   * @param {Omit<WorkerReply, 're'>} fields
   */
  reply(w, id, fields) {
    if (!w.alive) return;
    try {
      w.child.send({ re: id, ...fields });
    } catch {
      // it died
    }
  }

  /** Shutdown: every live worker closes (a stopped one is continued first) and exits within 15 s. */
  async closeAll() {
    await Promise.all(
      this.liveWorkers().map(async (w) => {
        if (w.stopped) {
          try {
            w.child.kill?.('SIGCONT');
          } catch {
            // gone
          }
        }
        try {
          this.send(w, { cmd: 'close' });
        } catch {
          // gone
        }
        const outcome = await Promise.race([w.exited, sleep(15_000).then(() => 'timeout')]);
        if (outcome === 'timeout') {
          this.run.tally.violation('harnessErrors', { what: 'worker did not close', owner: w.owner });
          this.kill(w);
        }
      }),
    );
  }

  // ---- fault proxy ----

  /** Starts the fault proxy in front of the server (faults off until `set`). */
  async startProxy() {
    const { o } = this.run;
    const attributes = { key: ATTR.key, token: ATTR.token, data: ATTR.data };
    /** @type {import('./protocol.mjs').ProxyConfig} */
    const config = { target: o.endpoint, seed: o.seed, attributes };
    const proxy = fork(PROXY, [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.proxy = proxy;
    const forgetProxy = killOnExit(() => proxy.kill('SIGKILL'));
    proxy.once('exit', forgetProxy);
    this.proxyEndpoint = await new Promise((resolve, reject) => {
      proxy.on('message', (/** @type {any} */ m) => {
        if (m?.type === 'listening') resolve(m.endpoint);
        else if (m?.re !== undefined) {
          this.proxyPending.get(m.re)?.(m);
          this.proxyPending.delete(m.re);
        }
      });
      proxy.once('exit', (code) => reject(new Error(`fault proxy exited (${code})`)));
    });
  }

  /**
   * A command to the fault proxy; resolves with its answer, rejects with its error.
   * @param {import('./protocol.mjs').ProxyCommand extends infer C ? C extends unknown ? Omit<C, 'id'> : never : never} message
   * @returns {Promise<ProxyReply>}
   */
  proxyCall(message) {
    const id = ++this.proxyId;
    return new Promise((resolve, reject) => {
      this.proxyPending.set(id, (m) => (m.ok ? resolve(m) : reject(new Error(m.error))));
      this.proxy?.send({ id, ...message });
    });
  }

  /** Kills every worker still alive, a stopped one too (after a run, or when it failed). */
  killWorkers() {
    for (const timer of this.pauseTimers) clearTimeout(timer.handle);
    for (const w of this.workers.values()) {
      if (w.alive && w.child?.kill) {
        try {
          w.child.kill('SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }

  /** Closes the fault proxy (3 s at most), then kills it. */
  async stopProxy() {
    if (this.proxy && this.proxy.exitCode === null) {
      await Promise.race([this.proxyCall({ cmd: 'close' }).catch(() => undefined), sleep(3_000)]);
      this.proxy.kill('SIGKILL');
    }
  }
}

/**
 * SDK settings per worker slot: no SDK retries / retries with a request timeout / SDK defaults.
 * @param {number} slot
 * @returns {SdkVariant}
 */
function sdkVariant(slot) {
  switch (slot % 3) {
    case 0:
      return { maxAttempts: 1 };
    case 1:
      return { maxAttempts: 3, requestTimeoutMs: 1_000 };
    default:
      return { maxAttempts: 3 };
  }
}
