// @ts-check
/**
 * The fenced data resource of the chaos suite: one DynamoDB item per lock key, in a data table of
 * the run's own, that every worker writes through the library's fence (`lock.fencedWrite()`, and
 * on servers with transactions also `lock.transact()`) — through the fault proxy, like its lock
 * requests — while the faults run.
 *
 * Every write appends `"<token> <writeId>"` to the item's list `writes` in the same atomic update
 * (`list_append`), so the item itself keeps the order in which writes landed. A write with a token
 * below one already in that list is a stale write that landed: the check the fence exists for.
 * The workers report each write before it is sent (`data-write`) and how it ended
 * (`data-write-end`); the harness keeps that log and holds it against the items afterwards
 * (`checkDataItems`, called by the final checks).
 *
 * A transaction does not run the fence condition (its check is the lock item's); it stamps the
 * fence attribute itself (`SET lockFence = :token`), as an application mixing the two must, so a
 * stale `fencedWrite` after it is refused too.
 */
import { ScanCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { DEFAULT_FENCE_ATTRIBUTE } from '../../dist/interfaces/fenced-write.interface.js';

/** @typedef {import('../scenario.mjs').ChaosRun} ChaosRun */
/** @typedef {import('../protocol.mjs').DataWriteMessage} DataWriteMessage */
/** @typedef {import('../protocol.mjs').DataWriteEndMessage} DataWriteEndMessage */
/** @typedef {import('../protocol.mjs').TraceEntry} TraceEntry */

/** The data item's attributes: its key (the data table is made like the lock table), the landing log, the fence. */
export const DATA_ATTR = { key: 'key', writes: 'writes', fence: DEFAULT_FENCE_ATTRIBUTE };

/** The data item of a lock key (a key of its own, so the fault proxy never takes it for a lock key). */
export function dataKey(/** @type {string} */ lockKey) {
  return `data:${lockKey}`;
}

/**
 * The one update a data write makes: append `"<token> <writeId>"` to `writes`; a transaction's
 * also stamps the fence attribute (a fenced write's is stamped by the library).
 * @param {{ table: string, key: string, token: number, writeId: string, stampFence: boolean }} write
 * @returns {import('@aws-sdk/client-dynamodb').Update}
 */
export function dataUpdate({ table, key, token, writeId, stampFence }) {
  return {
    TableName: table,
    Key: { [DATA_ATTR.key]: { S: dataKey(key) } },
    UpdateExpression: `SET #writes = list_append(if_not_exists(#writes, :none), :entry)${stampFence ? ', #fence = :token' : ''}`,
    ExpressionAttributeNames: { '#writes': DATA_ATTR.writes, ...(stampFence ? { '#fence': DATA_ATTR.fence } : {}) },
    ExpressionAttributeValues: {
      ':none': { L: [] },
      ':entry': { L: [{ S: `${token} ${writeId}` }] },
      ...(stampFence ? { ':token': { N: String(token) } } : {}),
    },
  };
}

/**
 * Whether the server runs `TransactWriteItems` (DynamoDB Local does, dynalite does not): one
 * transaction of a ConditionCheck on a missing item of the data table.
 * @param {import('@aws-sdk/client-dynamodb').DynamoDBClient} client
 * @param {string} table
 */
export async function serverHasTransactions(client, table) {
  try {
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: table,
              Key: { [DATA_ATTR.key]: { S: '__probe__' } },
              ConditionExpression: 'attribute_not_exists(#k)',
              ExpressionAttributeNames: { '#k': DATA_ATTR.key },
            },
          },
        ],
      }),
    );
    return true;
  } catch (error) {
    if (error?.name === 'UnknownOperationException') return false;
    throw error;
  }
}

/**
 * One data write as the harness heard of it (times: the harness's `Date.now()`, comparable with
 * the proxy's trace).
 * @typedef {object} DataWrite
 * @property {string} writeId
 * @property {string} owner
 * @property {string} key
 * @property {number} token
 * @property {string} leaseId
 * @property {'fencedWrite' | 'transact'} via
 * @property {string} where
 * @property {number} startAt
 * @property {boolean} pausedBefore the worker's process was SIGSTOPped between acquiring and this write
 * @property {number} [endAt]
 * @property {DataWriteEndMessage['outcome'] | 'died'} [outcome]
 * @property {string} [errorName]
 * @property {number} [newerToken]
 */

/** The log of data writes, from the workers' reports. */
export class DataLog {
  /** @param {ChaosRun} run */
  constructor(run) {
    this.run = run;
    /** @type {Map<string, DataWrite>} */
    this.writes = new Map();
    /** Whether the workers use `lock.transact()` for some writes (the server has transactions). */
    this.transactions = false;
    /** Workers SIGSTOPped at a data write's stall point, and when the last was. */
    this.stalls = 0;
    this.lastStallAt = Number.NEGATIVE_INFINITY;
  }

  /**
   * @param {import('../supervisor.mjs').WorkerHandle} w
   * @param {DataWriteMessage} m
   */
  onStart(w, m) {
    const { referee, supervisor } = this.run;
    const lease = referee.leases.get(m.leaseId);
    const acquiredAt = lease?.acquiredAt ?? performance.now();
    this.writes.set(m.writeId, {
      writeId: m.writeId,
      owner: w.owner,
      key: m.key,
      token: m.token,
      leaseId: m.leaseId,
      via: m.via,
      where: m.where,
      startAt: Date.now(),
      pausedBefore: supervisor.pausedDuring(w.owner, acquiredAt, performance.now()) !== undefined,
    });
  }

  /**
   * @param {import('../supervisor.mjs').WorkerHandle} w
   * @param {DataWriteEndMessage} m
   */
  onEnd(w, m) {
    const write = this.writes.get(m.writeId);
    if (!write) {
      this.run.tally.violation('harnessErrors', { what: 'data write ended that never started', owner: w.owner, writeId: m.writeId });
      return;
    }
    Object.assign(write, { endAt: Date.now(), outcome: m.outcome, errorName: m.errorName, newerToken: m.newerToken });
    if (m.outcome === 'unexpected')
      this.run.tally.violation('unexpectedErrors', { owner: w.owner, where: 'data write', via: write.via, message: m.message });
  }

  /**
   * A data write's request is about to leave `w`: during the chaos, at most one such stall every
   * `pauseEveryMs` (and within `maxStopped`), SIGSTOP it there for 1.3–1.8 leases; then answer
   * (the answer waits for the SIGCONT).
   * @param {import('../supervisor.mjs').WorkerHandle} w
   * @param {import('../protocol.mjs').StallPointMessage} m
   */
  onStallPoint(w, m) {
    const { o, supervisor, random, phase } = this.run;
    const t = performance.now();
    const stopped = supervisor.liveWorkers().filter((other) => other.stopped).length;
    if (phase === 'chaos' && !w.stopped && stopped < o.maxStopped && t - this.lastStallAt >= o.pauseEveryMs) {
      this.lastStallAt = t;
      this.stalls++;
      supervisor.pause(w, o.leaseMs * (1.3 + 0.5 * random()), true);
    }
    supervisor.reply(w, m.id, { ok: true });
  }

  /** @param {import('../supervisor.mjs').WorkerHandle} w its process died: its open writes with it */
  onWorkerExit(w) {
    for (const write of this.writes.values()) {
      if (write.owner !== w.owner || write.outcome) continue;
      write.outcome = 'died';
      write.endAt = Date.now();
    }
  }

  /** The counts for the report. */
  counts() {
    /** @type {Record<string, number>} */
    const outcomes = {};
    const byVia = { fencedWrite: 0, transact: 0 };
    let refusedAfterPause = 0;
    for (const write of this.writes.values()) {
      const outcome = write.outcome ?? 'open';
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      byVia[write.via]++;
      if (write.pausedBefore && (outcome === 'fenced' || outcome === 'lost')) refusedAfterPause++;
    }
    return {
      attempted: this.writes.size,
      stalls: this.stalls,
      byVia,
      transactions: this.transactions,
      landed: outcomes.landed ?? 0,
      fenced: outcomes.fenced ?? 0,
      lost: outcomes.lost ?? 0,
      refused: (outcomes.fenced ?? 0) + (outcomes.lost ?? 0),
      refusedAfterPause,
      outcomes,
    };
  }
}

/**
 * Once every worker closed: every data item read directly, its landing log checked against the
 * tokens and against what the workers were told.
 * - a write landed with a token below one that landed before it: `staleDataWrites`;
 * - the item's fence attribute is not the highest token that landed, or the log names a write
 *   nobody made: `harnessErrors`;
 * - a write acknowledged but not in the log, or refused (fenced, lost, failed) and yet in it with
 *   no fault of the proxy on a write of that worker meanwhile (a lost answer, then an SDK retry
 *   the fence refused, explains it): `dataWriteMismatches`.
 * @param {ChaosRun} run
 * @param {TraceEntry[]} trace the proxy's trace
 * @returns {Promise<{ items: number, entries: number, staleLanded: number, repeatedEntries: number, refusedButLanded: number, refusedAtServer: number }>}
 */
export async function checkDataItems(run, trace) {
  const { tally, direct, dataTable, data } = run;
  const output = await direct.send(new ScanCommand({ TableName: dataTable, ConsistentRead: true }));
  const summary = { items: 0, entries: 0, staleLanded: 0, repeatedEntries: 0, refusedButLanded: 0, refusedAtServer: 0 };
  /** @type {Set<string>} */
  const landed = new Set();
  for (const item of output.Items ?? []) {
    const key = item[DATA_ATTR.key]?.S;
    if (key === '__probe__') continue;
    summary.items++;
    const entries = (item[DATA_ATTR.writes]?.L ?? []).map((value) => {
      const [token, writeId] = String(value.S).split(' ');
      return { token: Number(token), writeId };
    });
    let highest = Number.NEGATIVE_INFINITY;
    for (const [index, entry] of entries.entries()) {
      summary.entries++;
      if (landed.has(entry.writeId)) summary.repeatedEntries++; // one call, two tries that landed (same token)
      landed.add(entry.writeId);
      if (!data.writes.has(entry.writeId)) tally.violation('harnessErrors', { what: 'data item names a write nobody made', key, entry });
      if (entry.token < highest) {
        summary.staleLanded++;
        const write = data.writes.get(entry.writeId);
        tally.violation('staleDataWrites', { key, index, token: entry.token, highestBefore: highest, write });
      }
      highest = Math.max(highest, entry.token);
    }
    const fence = item[DATA_ATTR.fence]?.N === undefined ? undefined : Number(item[DATA_ATTR.fence]?.N);
    if (entries.length > 0 && fence !== highest)
      tally.violation('harnessErrors', { what: 'data item fence is not its highest token landed', key, fence, highest });
  }
  for (const write of data.writes.values()) {
    if (write.outcome === 'landed' && !landed.has(write.writeId))
      tally.violation('dataWriteMismatches', { what: 'acknowledged write not in the item', write });
    // Only these say nothing was written (`failed`: a transient error or the request limit, may have landed).
    if ((write.outcome === 'fenced' || write.outcome === 'lost' || write.outcome === 'conflict') && landed.has(write.writeId)) {
      const faulted = trace.some(
        (entry) =>
          entry.owner === write.owner &&
          entry.fault !== undefined &&
          entry.fault !== 'latency' &&
          (entry.op === 'UpdateItem' || entry.op === 'TransactWriteItems') &&
          entry.at >= write.startAt - 50 &&
          entry.at <= (write.endAt ?? Date.now()) + 50,
      );
      if (faulted) summary.refusedButLanded++;
      else tally.violation('dataWriteMismatches', { what: 'write refused but in the item, no fault to explain it', write });
    }
  }
  // Refusals the server sent that the client may never have heard (its request limit ran out in a
  // pause first): a data write answered 400 without an injected fault is its condition failing.
  summary.refusedAtServer = trace.filter(
    (entry) =>
      entry.fault === undefined &&
      entry.status === 400 &&
      ((entry.op === 'UpdateItem' && entry.key?.startsWith('data:')) || entry.op === 'TransactWriteItems'),
  ).length;
  return summary;
}
