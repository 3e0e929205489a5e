// @ts-check
/**
 * An HTTP fault proxy between DynamoDB clients and a DynamoDB-compatible server.
 *
 * Every request is read in full, then either forwarded untouched or given one fault, chosen at
 * random with the configured rates (a fraction of requests, 0..1, per kind):
 *
 * | kind                   | what the client sees                                   | server applied it? |
 * |------------------------|--------------------------------------------------------|--------------------|
 * | `latency`              | the request forwarded `latencyMinMs..latencyMaxMs` late | yes (late)         |
 * | `delayed`              | the server's response held back `delayMinMs..delayMaxMs` (past the lease) | yes |
 * | `dropped`              | the request forwarded and answered, then the client socket reset (no response) | yes |
 * | `reset`                | the client socket reset at once                       | no                 |
 * | `provisionedThroughput`| HTTP 400 `ProvisionedThroughputExceededException`     | no                 |
 * | `throttling`           | HTTP 400 `ThrottlingException`                        | no                 |
 * | `http500`              | HTTP 500 `InternalServerError` (half of them after forwarding: applied) | half |
 * | `http503`              | HTTP 503 `ServiceUnavailable`                         | no                 |
 *
 * `latency` is drawn independently of the others (a request can be late and then faulted).
 * Rates can be changed at any time (`setRates`), e.g. to zero for a liveness phase; requests
 * already being delayed finish their delay.
 *
 * Counts: requests by operation (from `X-Amz-Target`), faults by kind and operation, and for
 * `dropped` / applied `http500` answers to writes, the strings in the request that look like
 * chaos attempt markers (`"chaos":"..."` inside a JSON `data` value), so the harness can follow
 * what happened to an acquisition whose response was lost. Requests are attributed to workers by
 * their `chaos/<owner>` user agent; with `attributes` (the lock item's attribute names) the proxy
 * also notes the first delivered answer that showed a worker its own attempt holding the lock.
 *
 * Run as a child process (`fork(fault-proxy.mjs, [JSON config])`) it listens on a free port and
 * is controlled over IPC: `{ id, cmd: 'set', rates }`, `{ id, cmd: 'stats' }`, `{ id, cmd: 'close' }`;
 * each is answered with `{ re: id, ... }`. It first sends `{ type: 'listening', endpoint }`.
 */
import http from 'node:http';
import { pathToFileURL } from 'node:url';

/** @typedef {import('../protocol.mjs').FaultRates} FaultRates */
/** @typedef {import('../protocol.mjs').FaultTiming} FaultTiming */
/** @typedef {import('../protocol.mjs').ProxyConfig} ProxyConfig */
/** @typedef {import('../protocol.mjs').ProxyCommand} ProxyCommand */
/** @typedef {import('../protocol.mjs').ProxyReply} ProxyReply */
/** @typedef {import('../protocol.mjs').ProxyStats} ProxyStats */
/** @typedef {import('../protocol.mjs').TraceEntry} TraceEntry */
/** @typedef {Required<FaultTiming>} Timing */
/** @typedef {{ status: number, headers: http.IncomingHttpHeaders, body: Buffer }} Answer the server's full answer to a forwarded request */

/** Fault kinds, in the order they are drawn. `latency` is drawn separately. */
export const HARD_FAULTS = ['delayed', 'dropped', 'reset', 'provisionedThroughput', 'throttling', 'http500', 'http503'];
export const FAULT_KINDS = ['latency', ...HARD_FAULTS];

const JSON_TYPE = 'application/x-amz-json-1.0';
const ERROR_PREFIX = 'com.amazonaws.dynamodb.v20120810#';
const MARKER = /\\?"chaos\\?"\s*:\s*\\?"([^"\\]+)\\?"/g;

/** A small seeded PRNG (mulberry32), so a run's fault pattern can be replayed with its seed. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Rates that inject nothing. */
export function noFaults() {
  return Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0]));
}

export class FaultProxy {
  /**
   * @param {object} options
   * @param {string} options.target base URL of the real server, e.g. `http://127.0.0.1:8000`
   * @param {FaultRates} [options.rates] fraction of requests per fault kind
   * @param {FaultTiming} [options.timing]
   * @param {number} [options.seed]
   * @param {ProxyConfig['attributes']} [options.attributes] the lock item's attribute names
   */
  constructor({ target, rates = noFaults(), timing = {}, seed = Date.now(), attributes }) {
    this.target = new URL(target);
    /** Attribute names of the lock item (`key`, `token`, `data`), to read answers for evidence. */
    this.attributes = attributes;
    this.random = seededRandom(seed);
    /** @type {Timing} */
    this.timing = { latencyMinMs: 2, latencyMaxMs: 40, delayMinMs: 2_500, delayMaxMs: 3_500, ...timing };
    // For the type checker only, no effect: fields set by `setRates` (just below), `resetStats` and `attemptOf`.
    /* eslint-disable @typescript-eslint/no-unused-expressions */
    /** @type {FaultRates} */
    this.rates;
    /** @type {ProxyStats} */
    this.stats;
    /** @type {Map<string, string> | undefined} owner token → the attempt it was first seen with */
    this.tokens;
    /* eslint-enable @typescript-eslint/no-unused-expressions */
    this.setRates(rates);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    /** @type {Set<import('node:net').Socket>} */
    this.sockets = new Set();
    /** @type {Set<NodeJS.Timeout>} */
    this.pendingTimers = new Set();
    this.resetStats();
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /**
   * Replaces the rates (missing kinds become 0); validates that they sum to at most 1.
   * @param {FaultRates | undefined} rates
   * @param {FaultTiming} [timing]
   */
  setRates(rates, timing) {
    const next = noFaults();
    for (const [kind, rate] of Object.entries(rates ?? {})) {
      if (!FAULT_KINDS.includes(kind)) throw new Error(`unknown fault kind ${kind}; expected one of ${FAULT_KINDS.join(', ')}`);
      if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) throw new Error(`rate of ${kind} must be in [0, 1], got ${rate}`);
      next[kind] = rate;
    }
    const hard = HARD_FAULTS.reduce((sum, kind) => sum + next[kind], 0);
    if (hard > 1) throw new Error(`fault rates (without latency) sum to ${hard} > 1`);
    this.rates = next;
    if (timing) this.timing = { ...this.timing, ...timing };
  }

  resetStats() {
    this.stats = {
      requests: 0,
      byOperation: {},
      injected: Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])),
      injectedByOperation: {},
      /** Writes whose answer the client never got (dropped) or got as an error (500) although applied. */
      lostWrites: [],
      /** Responses held back past the lease, by client and lock key: `{ owner, key, operation, from, to }` (epoch ms). */
      delays: [],
      /**
       * Per acquisition attempt: the first answer delivered to a worker that showed the lock held
       * by that attempt of the same worker (its own token): `{ attemptId: { owner, key, at, count } }`.
       */
      evidence: {},
      /** Every request: `{ at, owner, key, op, cond, fault, status, holder }` (epoch ms; `holder`: attempt shown in the answer). */
      trace: [],
      upstreamErrors: 0,
    };
  }

  /**
   * @param {number} [port] 0: a free port
   * @param {string} [host]
   * @returns {Promise<string>} the endpoint, `http://host:port`
   */
  async listen(port = 0, host = '127.0.0.1') {
    await /** @type {Promise<void>} */ (
      new Promise((resolve, reject) => {
        this.server.once('error', reject);
        this.server.listen(port, host, () => {
          this.server.off('error', reject);
          resolve();
        });
      })
    );
    // Listening on a host and port (not a pipe), the server's address is an `AddressInfo`.
    const address = /** @type {import('node:net').AddressInfo} */ (this.server.address());
    this.endpoint = `http://${host}:${address.port}`;
    return this.endpoint;
  }

  async close() {
    for (const timer of this.pendingTimers) clearTimeout(timer);
    this.pendingTimers.clear();
    await /** @type {Promise<void>} */ (
      new Promise((resolve) => {
        this.server.close(() => resolve());
        for (const socket of this.sockets) socket.destroy();
      })
    );
    this.agent.destroy();
  }

  /** @returns {ProxyStats} the counts so far, with the rates */
  snapshot() {
    return structuredClone({ ...this.stats, rates: this.rates });
  }

  // ---- request handling ----

  /**
   * @param {http.IncomingMessage} req
   * @param {http.ServerResponse} res
   */
  async handle(req, res) {
    const body = await readAll(req).catch(() => undefined);
    if (body === undefined) return;
    const operation =
      String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() || /** @type {string} */ (req.method); // a server's requests always have a method
    this.stats.requests++;
    this.stats.byOperation[operation] = (this.stats.byOperation[operation] ?? 0) + 1;

    if (this.rates.latency > 0 && this.random() < this.rates.latency) {
      this.count('latency', operation);
      const { latencyMinMs, latencyMaxMs } = this.timing;
      await this.sleep(latencyMinMs + this.random() * (latencyMaxMs - latencyMinMs));
      if (req.socket.destroyed) return;
    }

    const fault = this.draw();
    if (fault) this.count(fault, operation);
    const entry = this.traceEntry(req, body, operation, fault);
    switch (fault) {
      case 'reset':
        return resetSocket(req.socket);
      case 'provisionedThroughput':
        return sendError(
          res,
          400,
          'ProvisionedThroughputExceededException',
          'The level of configured provisioned throughput for the table was exceeded (injected)',
        );
      case 'throttling':
        return sendError(res, 400, 'ThrottlingException', 'Rate of requests exceeds the allowed throughput (injected)');
      case 'http503':
        return sendError(res, 503, 'ServiceUnavailable', 'Service unavailable (injected)');
      case 'http500': {
        if (this.random() < 0.5) return sendError(res, 500, 'InternalServerError', 'Internal server error (injected, not applied)');
        const answer = await this.forward(req, body, entry);
        if (answer?.status === 200) this.noteLostWrite('http500', operation, body, req);
        return sendError(res, 500, 'InternalServerError', 'Internal server error (injected after the server applied the request)');
      }
      case 'dropped': {
        const answer = await this.forward(req, body, entry);
        if (answer?.status === 200) this.noteLostWrite('dropped', operation, body, req);
        return resetSocket(req.socket);
      }
      case 'delayed': {
        const answer = await this.forward(req, body, entry);
        if (!answer) return sendError(res, 500, 'InternalServerError', 'upstream failed');
        const { delayMinMs, delayMaxMs } = this.timing;
        const from = Date.now();
        await this.sleep(delayMinMs + this.random() * (delayMaxMs - delayMinMs));
        this.stats.delays.push({ ...whoAndWhat(req, body), operation, from, to: Date.now() });
        if (reply(res, answer)) this.noteEvidence(req, answer);
        return;
      }
      default: {
        const answer = await this.forward(req, body, entry);
        if (!answer) return sendError(res, 500, 'InternalServerError', 'upstream failed');
        if (reply(res, answer)) this.noteEvidence(req, answer);
        return;
      }
    }
  }

  /**
   * The attempt (or `token:<prefix>`) holding the lock in an answer's item, `-` if free, `undefined` if no item.
   * @param {Buffer} data
   * @returns {string | undefined}
   */
  holderShown(data) {
    if (!this.attributes) return undefined;
    try {
      const parsed = JSON.parse(data.toString('utf8'));
      const item = parsed?.Item ?? parsed?.Attributes;
      if (!item) return undefined;
      const token = item[this.attributes.token]?.S;
      if (!token) return '-';
      const data_ = item[this.attributes.data]?.S;
      return (data_ && JSON.parse(data_)?.chaos) || `token:${token.slice(0, 6)}`;
    } catch {
      return undefined;
    }
  }

  /**
   * Records an answer that told a worker its own attempt holds the lock.
   * @param {http.IncomingMessage} req
   * @param {Answer} answer
   */
  noteEvidence(req, answer) {
    if (!this.attributes || (answer.status !== 200 && answer.status !== 400)) return;
    let parsed;
    try {
      parsed = JSON.parse(answer.body.toString('utf8'));
    } catch {
      return;
    }
    if (answer.status === 400 && !String(parsed?.__type ?? '').includes('ConditionalCheckFailed')) return;
    const item = parsed?.Item ?? parsed?.Attributes;
    const { key: keyName, token: tokenName, data: dataName } = this.attributes;
    if (!item?.[tokenName]?.S || !item[dataName]?.S) return;
    let attemptId;
    try {
      attemptId = JSON.parse(item[dataName].S)?.chaos;
    } catch {
      return;
    }
    const { owner } = whoAndWhat(req, Buffer.alloc(0));
    if (!owner || typeof attemptId !== 'string' || !attemptId.startsWith(`${owner}:`)) return;
    const seen = this.stats.evidence[attemptId];
    if (seen) seen.count++;
    else this.stats.evidence[attemptId] = { owner, key: item[keyName]?.S, at: Date.now(), count: 1 };
  }

  /** @returns {string | undefined} the hard fault drawn for a request, if any */
  draw() {
    let roll = this.random();
    for (const kind of HARD_FAULTS) {
      roll -= this.rates[kind];
      if (roll < 0) return kind;
    }
    return undefined;
  }

  /**
   * @param {string} kind
   * @param {string} operation
   */
  count(kind, operation) {
    this.stats.injected[kind]++;
    const byKind = (this.stats.injectedByOperation[operation] ??= {});
    byKind[kind] = (byKind[kind] ?? 0) + 1;
  }

  /**
   * @param {'dropped' | 'http500'} kind
   * @param {string} operation
   * @param {Buffer} body
   * @param {http.IncomingMessage} req
   */
  noteLostWrite(kind, operation, body, req) {
    if (operation === 'GetItem' || operation === 'Scan' || operation === 'Query') return;
    const text = body.toString('utf8');
    const markers = [...new Set([...text.matchAll(MARKER)].map((m) => m[1]))];
    this.stats.lostWrites.push({ kind, operation, markers, ...whoAndWhat(req, body), at: Date.now() });
  }

  /**
   * The chaos attempt a request is about: its marker, or the attempt its owner token was first seen with.
   * @param {Buffer} body
   * @returns {string | undefined}
   */
  attemptOf(body) {
    const text = body.toString('utf8');
    const marker = [...text.matchAll(MARKER)][0]?.[1];
    const token = /":token"\s*:\s*\{\s*"S"\s*:\s*"([^"]+)"/.exec(text)?.[1];
    this.tokens ??= new Map();
    if (marker && token && !this.tokens.has(token)) this.tokens.set(token, marker);
    return marker ?? (token ? (this.tokens.get(token) ?? `token:${token.slice(0, 6)}`) : undefined);
  }

  /**
   * @param {http.IncomingMessage} req
   * @param {Buffer} body
   * @param {string} operation
   * @param {string | undefined} fault
   * @returns {TraceEntry}
   */
  traceEntry(req, body, operation, fault) {
    let cond;
    try {
      const parsed = JSON.parse(body.toString('utf8'));
      cond = parsed.ConditionExpression?.slice(0, 80) ?? (parsed.ReturnValues ? `(${parsed.ReturnValues})` : undefined);
    } catch {
      // not JSON
    }
    /** @type {TraceEntry} */
    const entry = { at: Date.now(), ...whoAndWhat(req, body), op: operation, cond, fault, attempt: this.attemptOf(body) };
    this.stats.trace.push(entry);
    return entry;
  }

  /**
   * Sends the request to the server; resolves with its full answer, or `undefined` if it failed.
   * @param {http.IncomingMessage} req
   * @param {Buffer} body
   * @param {TraceEntry} [entry] gets the answer's status and the holder it shows
   * @returns {Promise<Answer | undefined>}
   */
  forward(req, body, entry) {
    return new Promise((resolve) => {
      const headers = { ...req.headers, host: this.target.host, 'content-length': String(body.length) };
      delete headers.connection;
      const upstream = http.request(
        { host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers, agent: this.agent },
        (response) => {
          readAll(response).then(
            (data) => {
              if (entry) {
                entry.status = response.statusCode;
                entry.holder = this.holderShown(data);
              }
              resolve({ status: response.statusCode ?? 500, headers: response.headers, body: data });
            },
            () => resolve(undefined),
          );
        },
      );
      upstream.on('error', () => {
        this.stats.upstreamErrors++;
        resolve(undefined);
      });
      upstream.end(body);
    });
  }

  /**
   * @param {number} ms
   * @returns {Promise<void>}
   */
  sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pendingTimers.delete(timer);
        resolve();
      }, ms);
      this.pendingTimers.add(timer);
    });
  }
}

/**
 * The client (from a `chaos/<owner>` user agent, as the chaos workers set it) and the lock key
 * (the string partition key value of `Key`) of a request.
 * @param {http.IncomingMessage} req
 * @param {Buffer} body
 * @returns {{ owner?: string, key?: string }}
 */
function whoAndWhat(req, body) {
  const agent = `${req.headers['user-agent'] ?? ''} ${req.headers['x-amz-user-agent'] ?? ''}`;
  const owner = /chaos\/([\w.-]+)/.exec(agent)?.[1];
  let key;
  try {
    const parsed = JSON.parse(body.toString('utf8'));
    key = Object.values(parsed?.Key ?? {})[0]?.S;
  } catch {
    // not JSON
  }
  return { owner, key };
}

/**
 * @param {http.IncomingMessage} stream a request or a response
 * @returns {Promise<Buffer>}
 */
function readAll(stream) {
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
    stream.on('aborted', () => reject(new Error('aborted')));
  });
}

/**
 * Sends the server's answer on; `false` if the client is gone.
 * @param {http.ServerResponse} res
 * @param {Answer} answer
 * @returns {boolean}
 */
function reply(res, answer) {
  if (res.destroyed || res.socket?.destroyed) return false;
  const headers = { ...answer.headers };
  delete headers.connection;
  delete headers['keep-alive'];
  delete headers['transfer-encoding'];
  headers['content-length'] = String(answer.body.length);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
  return true;
}

/**
 * @param {http.ServerResponse} res
 * @param {number} status
 * @param {string} type the error's name, e.g. `ThrottlingException`
 * @param {string} message
 */
function sendError(res, status, type, message) {
  if (res.destroyed || res.socket?.destroyed) return;
  const body = Buffer.from(JSON.stringify({ __type: `${ERROR_PREFIX}${type}`, message }));
  res.writeHead(status, {
    'content-type': JSON_TYPE,
    'content-length': String(body.length),
    'x-amzn-requestid': `chaos-${Math.random().toString(36).slice(2)}`,
    'x-amzn-errortype': type,
  });
  res.end(body);
}

/**
 * Ends a connection abruptly: a TCP RST where supported, so the client sees ECONNRESET.
 * @param {import('node:net').Socket} socket
 */
function resetSocket(socket) {
  if (socket.destroyed) return;
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}

// ---- child-process entry ----

/**
 * `process.send`, typed with what the proxy sends. Forked, the proxy has an IPC channel, so it is
 * defined; it is called as `(process.send)(...)`, which keeps `process` as `this`.
 * @typedef {(message: ProxyReply | { type: 'listening', endpoint: string }, callback?: () => void) => boolean} Send
 */
/** @typedef {Extract<ProxyCommand, { cmd: 'set' }>} SetCommand */

async function main() {
  /** @type {ProxyConfig} */
  const config = JSON.parse(process.argv[2] ?? '{}');
  const proxy = new FaultProxy(config);
  const endpoint = await proxy.listen(config.port ?? 0);
  process.on('message', async (/** @type {ProxyCommand} */ message) => {
    const { id, cmd } = message ?? {};
    try {
      if (cmd === 'set') {
        // `cmd` is 'set', so `message` is the `set` command (destructured from `message ?? {}`, TS can't tell).
        proxy.setRates(/** @type {SetCommand} */ (message).rates, /** @type {SetCommand} */ (message).timing);
        /** @type {Send} */ (process.send)({ re: id, ok: true, rates: proxy.rates });
      } else if (cmd === 'stats') {
        /** @type {Send} */ (process.send)({ re: id, ok: true, stats: proxy.snapshot() });
      } else if (cmd === 'close') {
        const stats = proxy.snapshot();
        await proxy.close();
        /** @type {Send} */ (process.send)({ re: id, ok: true, stats }, () => process.exit(0));
      } else {
        /** @type {Send} */ (process.send)({ re: id, ok: false, error: `unknown command ${cmd}` });
      }
    } catch (error) {
      /** @type {Send} */ (process.send)({ re: id, ok: false, error: String(error?.message ?? error) });
    }
  });
  process.on('disconnect', () => process.exit(0));
  /** @type {Send} */ (process.send)({ type: 'listening', endpoint });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
