/**
 * A counting HTTP proxy in front of the DynamoDB server. Every system under test talks
 * through it, so requests are counted the same way whatever the client library does.
 *
 * Counts are kept per table, per operation (from `X-Amz-Target: DynamoDB_20120810.UpdateItem`;
 * GetItem is split into `GetItem:strong` / `GetItem:eventual` by its ConsistentRead flag) and
 * per outcome: `ok` (2xx), `ConditionalCheckFailedException`, or another error `__type`.
 * Each scenario segment uses its own table, so its counts are exactly its own.
 *
 * Runs in its own process (forked by `startCountingProxy`); the orchestrator asks for counts
 * over IPC. Plain HTTP only: fine for local servers, which do not check the signed Host.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { fileURLToPath } from 'node:url';
import { isMain } from './worker.mjs';

/** Forks the proxy in front of `upstream`; resolves to `{ endpoint, counts(), stop() }`. */
export async function startCountingProxy(upstream) {
  const child = fork(fileURLToPath(import.meta.url), [upstream], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const killNow = () => child.kill('SIGKILL');
  process.once('exit', killNow);
  const pending = new Map();
  let nextId = 0;
  const port = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`counting proxy exited (code ${code})`)));
    child.on('message', (message) => {
      if (message.type === 'listening') resolve(message.port);
      if (message.type === 'counts') {
        pending.get(message.id)?.(message.counts);
        pending.delete(message.id);
      }
    });
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    /** A snapshot of every count: `{ [table]: { [operation]: { [outcome]: n } } }`. */
    counts() {
      const id = nextId++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        child.send({ type: 'counts', id });
      });
    },
    async stop() {
      process.off('exit', killNow);
      child.kill('SIGTERM');
    },
  };
}

/** Counts in `after` minus those in `before`, for one table. */
export function diffCounts(before, after, table) {
  const out = {};
  for (const [op, outcomes] of Object.entries(after[table] ?? {})) {
    for (const [outcome, n] of Object.entries(outcomes)) {
      const d = n - (before[table]?.[op]?.[outcome] ?? 0);
      if (d > 0) (out[op] ??= {})[outcome] = d;
    }
  }
  return out;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/**
 * Totals of one table's counts. Cost is in write-equivalents at on-demand prices: a write
 * request unit (also charged for a failed conditional write) = 1, a strongly consistent read
 * = 0.2, an eventually consistent read = 0.1 (items here are well under 1 KB / 4 KB).
 */
export function totals(counts) {
  const t = { requests: 0, writes: 0, failedWrites: 0, strongReads: 0, eventualReads: 0, otherErrors: 0, writeEq: 0 };
  for (const [op, outcomes] of Object.entries(counts)) {
    for (const [outcome, n] of Object.entries(outcomes)) {
      t.requests += n;
      if (outcome !== 'ok' && outcome !== 'ConditionalCheckFailedException') t.otherErrors += n;
      if (WRITES.has(op)) {
        t.writes += n;
        if (outcome === 'ConditionalCheckFailedException') t.failedWrites += n;
      } else if (op === 'GetItem:strong') t.strongReads += n;
      else if (op === 'GetItem:eventual') t.eventualReads += n;
    }
  }
  t.writeEq = t.writes + 0.2 * t.strongReads + 0.1 * t.eventualReads;
  return t;
}

// ---- the proxy process ----

function serve(upstream) {
  const target = new URL(upstream);
  const transport = target.protocol === 'https:' ? https : http;
  const agent = new transport.Agent({ keepAlive: true, maxSockets: Infinity });
  const counts = {};
  const count = (table, op, outcome) => {
    const byOp = (counts[table] ??= {});
    const byOutcome = (byOp[op] ??= {});
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let op = String(req.headers['x-amz-target'] ?? 'unknown')
        .split('.')
        .pop();
      let table = '(none)';
      try {
        const parsed = JSON.parse(body.toString('utf8') || '{}');
        table = parsed.TableName ?? table;
        if (op === 'GetItem') op = parsed.ConsistentRead ? 'GetItem:strong' : 'GetItem:eventual';
      } catch {
        // not JSON: count under (none)
      }
      const upstreamReq = transport.request(
        {
          protocol: target.protocol,
          hostname: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
          agent,
        },
        (upstreamRes) => {
          const status = upstreamRes.statusCode ?? 0;
          res.writeHead(status, upstreamRes.headers);
          if (status >= 200 && status < 300) {
            count(table, op, 'ok');
            upstreamRes.pipe(res);
            return;
          }
          // Errors are small JSON bodies: read the __type, then pass the body on unchanged.
          const parts = [];
          upstreamRes.on('data', (chunk) => parts.push(chunk));
          upstreamRes.on('end', () => {
            const text = Buffer.concat(parts);
            let type = `HTTP ${status}`;
            try {
              type = String(JSON.parse(text.toString('utf8')).__type ?? type)
                .split('#')
                .pop();
            } catch {
              // keep HTTP status
            }
            count(table, op, type);
            res.end(text);
          });
        },
      );
      upstreamReq.on('error', (error) => {
        count(table, op, `proxy: ${error.code ?? error.message}`);
        res.destroy(error);
      });
      upstreamReq.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send({ type: 'listening', port: server.address().port }));
  process.on('message', (message) => {
    if (message.type === 'counts') process.send({ type: 'counts', id: message.id, counts });
  });
  process.on('disconnect', () => process.exit(0));
}

if (isMain(import.meta.url)) serve(process.argv[2]);
