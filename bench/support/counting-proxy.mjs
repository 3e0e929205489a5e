/**
 * A counting HTTP proxy in front of the DynamoDB server. Every system under test talks
 * through it, so requests are counted the same way whatever the client library does.
 *
 * Counts are kept per table, per operation (from `X-Amz-Target: DynamoDB_20120810.UpdateItem`;
 * GetItem is split into `GetItem:strong` / `GetItem:eventual` by its ConsistentRead flag) and
 * per outcome: `ok` (2xx), `ConditionalCheckFailedException`, or another error `__type`.
 * Each scenario segment uses its own table, so its counts are exactly its own.
 *
 * Capacity metering, for the tables a scenario asks for (`meter(tables)`; no other table's
 * requests or answers change): UpdateItem / PutItem / DeleteItem / GetItem requests get
 * `ReturnConsumedCapacity: TOTAL`, writes also the item back (`ReturnValues` ALL_NEW, or ALL_OLD
 * for a put or delete, and `ReturnValuesOnConditionCheckFailure: ALL_OLD`) when the client did
 * not ask for it, so that the proxy sees every item's size; whatever the client did not ask for
 * is taken out of the answer again (body length and CRC32 header fixed), so the client sees the
 * answer it asked for. Per table it sums the capacity the server reports and the capacity
 * computed from item sizes (`capacity.mjs`), split into writes (WCU) and reads (RCU), and keeps
 * the largest item seen. A failed conditional write carries no capacity: it is billed from the
 * item the server returns with it (DynamoDB Local does), else counted as 1 WCU, separately (a
 * server that returns no item, as dynalite). Request bodies are re-serialised, which breaks
 * their signature: fine for local servers, which do not check it.
 *
 * Runs in its own process (forked by `startCountingProxy`); the orchestrator asks for counts
 * over IPC. Plain HTTP only: fine for local servers, which do not check the signed Host.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { itemBytes, readUnits, writeUnits } from './capacity.mjs';
import { isMain } from './worker.mjs';

/** Forks the proxy in front of `upstream`; resolves to `{ endpoint, counts(), meter(tables), capacity(), stop() }`. */
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
      if (message.type === 'reply') {
        pending.get(message.id)?.(message.value);
        pending.delete(message.id);
      }
    });
  });
  const ask = (type, fields = {}) => {
    const id = nextId++;
    return new Promise((resolve) => {
      pending.set(id, resolve);
      child.send({ type, id, ...fields });
    });
  };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    /** A snapshot of every count: `{ [table]: { [operation]: { [outcome]: n } } }`. */
    counts: () => ask('counts'),
    /** Meters capacity on these tables from now on (resolves once the proxy does). */
    meter: (tables) => ask('meter', { tables }),
    /** A snapshot of the capacity metered so far: `{ [table]: meter }` (see `capacityTotals`). */
    capacity: () => ask('capacity'),
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
  const t = {
    requests: 0,
    writes: 0,
    failedWrites: 0,
    strongReads: 0,
    eventualReads: 0,
    otherErrors: 0,
    writeEq: 0,
    transactions: 0,
    cancelledTransactions: 0,
  };
  for (const [op, outcomes] of Object.entries(counts)) {
    for (const [outcome, n] of Object.entries(outcomes)) {
      t.requests += n;
      if (op === 'TransactWriteItems') {
        if (outcome === 'ok') t.transactions += n;
        else if (outcome === 'TransactionCanceledException') t.cancelledTransactions += n;
      }
      if (outcome !== 'ok' && outcome !== 'ConditionalCheckFailedException' && outcome !== 'TransactionCanceledException')
        t.otherErrors += n;
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

/** An empty capacity meter (one per metered table). */
function emptyMeter() {
  return {
    /** Successful writes: how many, units computed from item sizes, and those the server reported. */
    writes: { n: 0, units: 0, reportedN: 0, reportedUnits: 0 },
    reads: { n: 0, units: 0, reportedN: 0, reportedUnits: 0 },
    /** Failed conditional writes: billed from the returned item, reported (never seen), or assumed 1 WCU. */
    failedWrites: { n: 0, fromItemN: 0, fromItemUnits: 0, reportedN: 0, reportedUnits: 0, assumedN: 0 },
    /** Requests of other operations on the table (Scan, Query, batches...): counted, not billed here. */
    unmetered: 0,
    /** Largest item seen in any answer or write, in bytes (`capacity.mjs` rules). */
    maxItemBytes: 0,
  };
}

/** One table's capacity in `after` minus that in `before` (the largest item: as of `after`). */
export function diffCapacity(before, after, table) {
  const a = after[table] ?? emptyMeter();
  const b = before[table] ?? emptyMeter();
  const out = emptyMeter();
  for (const group of ['writes', 'reads', 'failedWrites']) {
    for (const field of Object.keys(out[group])) out[group][field] = (a[group][field] ?? 0) - (b[group][field] ?? 0);
  }
  out.unmetered = a.unmetered - b.unmetered;
  out.maxItemBytes = a.maxItemBytes;
  return out;
}

/**
 * Billed capacity of a metered table (a `diffCapacity`): WCU (successful writes + failed
 * conditional writes) and RCU, each from the server's figures when it reported one for every
 * request of that kind, else computed from item sizes; `source` says which, and `computed`
 * gives the computed figures as a cross-check.
 */
export function capacityTotals(d) {
  const reported = (g) => g.n > 0 && g.reportedN === g.n;
  const source = (g) =>
    g.n === 0
      ? 'none sent'
      : reported(g)
        ? 'server-reported'
        : g.reportedN > 0
          ? 'computed from item sizes (server reported some)'
          : 'computed from item sizes';
  const f = d.failedWrites;
  const failedUnits = f.fromItemUnits + f.reportedUnits + f.assumedN;
  const writeUnitsOk = reported(d.writes) ? d.writes.reportedUnits : d.writes.units;
  return {
    wcu: writeUnitsOk + failedUnits,
    rcu: reported(d.reads) ? d.reads.reportedUnits : d.reads.units,
    successfulWrites: d.writes.n,
    failedWrites: f.n,
    reads: d.reads.n,
    failedWriteUnits: failedUnits,
    failedWritesFromItem: f.fromItemN,
    failedWritesAssumed: f.assumedN,
    computed: { wcu: d.writes.units + f.fromItemUnits + f.assumedN, rcu: d.reads.units },
    source: {
      writes: source(d.writes),
      reads: source(d.reads),
      failedWrites:
        f.n === 0
          ? 'none'
          : [
              f.fromItemN ? `${f.fromItemN} computed from the item returned with the failure` : '',
              f.reportedN ? `${f.reportedN} server-reported` : '',
              f.assumedN ? `${f.assumedN} assumed 1 WCU (no item returned)` : '',
            ]
              .filter(Boolean)
              .join(', '),
    },
    maxItemBytes: d.maxItemBytes,
    unmetered: d.unmetered,
  };
}

// ---- the proxy process ----

const METERED_OPS = new Set(['UpdateItem', 'PutItem', 'DeleteItem', 'GetItem']);

/**
 * Makes a request of a metered table return what the proxy needs (see the header); returns what
 * to take out of the answer again and what is known of the write.
 */
function meterRequest(op, parsed) {
  const plan = {
    op,
    key: JSON.stringify(parsed.Key ?? null),
    strong: parsed.ConsistentRead === true,
    keepCapacity: parsed.ReturnConsumedCapacity !== undefined && parsed.ReturnConsumedCapacity !== 'NONE',
    stripAttributes: false,
    stripFailedItem: false,
    returns: op === 'GetItem' ? 'ITEM' : (parsed.ReturnValues ?? 'NONE'),
    putBytes: op === 'PutItem' ? itemBytes(parsed.Item) : 0,
  };
  if (!plan.keepCapacity) parsed.ReturnConsumedCapacity = 'TOTAL';
  if (op === 'GetItem') return plan;
  if (plan.returns === 'NONE') {
    parsed.ReturnValues = op === 'UpdateItem' ? 'ALL_NEW' : 'ALL_OLD';
    plan.returns = parsed.ReturnValues;
    plan.stripAttributes = true;
  }
  if (parsed.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD') {
    parsed.ReturnValuesOnConditionCheckFailure = 'ALL_OLD';
    plan.stripFailedItem = true;
  }
  return plan;
}

/**
 * Bills one answer of a metered table into `m` (its meter) and `shadow` (the last known size of
 * each item by key); returns the answer the client asked for.
 */
function meterAnswer(plan, m, shadow, status, type, body) {
  const ok = status >= 200 && status < 300;
  const seen = (bytes) => (m.maxItemBytes = Math.max(m.maxItemBytes, bytes));
  const reported = body.ConsumedCapacity?.CapacityUnits;
  if (ok && plan.op === 'GetItem') {
    const bytes = itemBytes(body.Item);
    if (body.Item) shadow.set(plan.key, bytes);
    seen(bytes);
    m.reads.n++;
    m.reads.units += readUnits(bytes, plan.strong);
    addReported(m.reads, reported);
  } else if (ok) {
    // Before: the item this write replaced (returned, else the last one seen); after: the new item.
    const returnedOld = plan.returns === 'ALL_OLD' ? itemBytes(body.Attributes) : undefined;
    const oldBytes = returnedOld ?? shadow.get(plan.key) ?? 0;
    let newBytes = oldBytes; // UPDATED_NEW / UPDATED_OLD: the change is not known; bill the old size
    if (plan.op === 'PutItem') newBytes = plan.putBytes;
    else if (plan.op === 'DeleteItem') newBytes = 0;
    else if (plan.returns === 'ALL_NEW') newBytes = itemBytes(body.Attributes);
    if (plan.op === 'DeleteItem') shadow.delete(plan.key);
    else if (plan.op === 'UpdateItem') shadow.set(plan.key, newBytes);
    seen(Math.max(oldBytes, newBytes));
    m.writes.n++;
    m.writes.units += writeUnits(oldBytes, newBytes);
    addReported(m.writes, reported);
  } else if (type === 'ConditionalCheckFailedException') {
    const f = m.failedWrites;
    f.n++;
    if (typeof reported === 'number') addReported(f, reported);
    else if (body.Item) {
      const bytes = itemBytes(body.Item);
      if (plan.op !== 'PutItem') shadow.set(plan.key, bytes);
      seen(bytes);
      f.fromItemN++;
      f.fromItemUnits += writeUnits(bytes);
    } else f.assumedN++;
  }
  // Other errors (throttling, validation...) are not billed.
  if (!plan.keepCapacity) delete body.ConsumedCapacity;
  if (ok && plan.stripAttributes) delete body.Attributes;
  if (!ok && plan.stripFailedItem) delete body.Item;
  return body;
}

/** Adds a server-reported figure to a meter group. */
function addReported(group, units) {
  if (typeof units !== 'number') return;
  group.reportedN++;
  group.reportedUnits += units;
}

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
  const metered = new Set();
  const meters = {};
  const shadows = {};

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      let headers = req.headers;
      const base = String(req.headers['x-amz-target'] ?? 'unknown')
        .split('.')
        .pop();
      let op = base;
      let table = '(none)';
      let plan = null;
      try {
        const parsed = JSON.parse(body.toString('utf8') || '{}');
        // A transaction names its table in each action (every one here writes one table).
        const action = parsed.TransactItems?.[0];
        table = parsed.TableName ?? (action && Object.values(action)[0]?.TableName) ?? table;
        if (op === 'GetItem') op = parsed.ConsistentRead ? 'GetItem:strong' : 'GetItem:eventual';
        if (metered.has(table)) {
          if (METERED_OPS.has(base)) {
            plan = meterRequest(base, parsed);
            body = Buffer.from(JSON.stringify(parsed));
            headers = { ...req.headers, 'content-length': String(body.length) };
            delete headers['accept-encoding']; // the answer is read and rewritten: keep it plain
          } else meters[table].unmetered++;
        }
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
          headers,
          agent,
        },
        (upstreamRes) => {
          const status = upstreamRes.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          if (ok && !plan) {
            res.writeHead(status, upstreamRes.headers);
            count(table, op, 'ok');
            upstreamRes.pipe(res);
            return;
          }
          // Errors are small JSON bodies: read the __type, then pass the body on unchanged.
          // Metered answers are read whole, billed, and passed on as the client asked for them.
          const parts = [];
          upstreamRes.on('data', (chunk) => parts.push(chunk));
          upstreamRes.on('end', () => {
            let text = Buffer.concat(parts);
            let type = ok ? 'ok' : `HTTP ${status}`;
            let parsed;
            try {
              parsed = JSON.parse(text.toString('utf8'));
              if (!ok)
                type = String(parsed.__type ?? type)
                  .split('#')
                  .pop();
            } catch {
              // keep HTTP status
            }
            count(table, op, type);
            let outHeaders = upstreamRes.headers;
            if (plan && parsed && !upstreamRes.headers['content-encoding']) {
              text = Buffer.from(JSON.stringify(meterAnswer(plan, meters[table], shadows[table], status, type, parsed)));
              outHeaders = { ...upstreamRes.headers, 'content-length': String(text.length) };
              delete outHeaders['transfer-encoding'];
              if (outHeaders['x-amz-crc32'] !== undefined) outHeaders['x-amz-crc32'] = String(zlib.crc32(text));
            }
            res.writeHead(status, outHeaders);
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
    const reply = (value) => process.send({ type: 'reply', id: message.id, value });
    if (message.type === 'counts') reply(counts);
    if (message.type === 'capacity') reply(meters);
    if (message.type === 'meter') {
      for (const table of message.tables) {
        metered.add(table);
        meters[table] ??= emptyMeter();
        shadows[table] ??= new Map();
      }
      reply(true);
    }
  });
  process.on('disconnect', () => process.exit(0));
}

if (isMain(import.meta.url)) serve(process.argv[2]);
