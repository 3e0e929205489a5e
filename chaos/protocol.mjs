// @ts-check
/**
 * The messages between the chaos harness and its child processes, over Node's IPC channel — the
 * one place that says what each side may send. Types only (JSDoc); `worker.mjs`,
 * `support/fault-proxy.mjs` and the harness (`scenario.mjs` and its parts) import them with
 * `@typedef {import('./protocol.mjs').X} X`.
 *
 * Worker (`worker.mjs`): started with one JSON argument, a {@link WorkerConfig}. It sends
 * {@link WorkerMessage}s; those with an `id` (`enter`, `write`, `exit`) are requests, each answered
 * with a {@link WorkerReply} `{ re: id, ... }` before the worker goes on. The harness sends
 * {@link WorkerCommand}s.
 *
 * Fault proxy (`support/fault-proxy.mjs`): started with one JSON argument, a {@link ProxyConfig};
 * it first sends `{ type: 'listening', endpoint }`, then answers each {@link ProxyCommand}
 * `{ id, cmd }` with a {@link ProxyReply} `{ re: id, ok, ... }`.
 */

// ---- worker ----

/**
 * SDK settings of one worker: no SDK retries, retries with a request timeout, or SDK defaults.
 * @typedef {object} SdkVariant
 * @property {number} maxAttempts
 * @property {number} [requestTimeoutMs]
 */

/**
 * The worker's one argument.
 * @typedef {object} WorkerConfig
 * @property {string} owner `w<slot>g<generation>`: the lock's owner name and the `chaos/<owner>` user agent
 * @property {string} endpoint the fault proxy
 * @property {string} table
 * @property {string[]} keys
 * @property {number} leaseMs
 * @property {number} waitMs how long an acquisition may wait
 * @property {number} tasks concurrent task loops
 * @property {number} holdMinMs
 * @property {number} holdMaxMs
 * @property {number} maxWrites checked writes per section, at most
 * @property {number} uncheckedRate fraction of sections ending with one unchecked write
 * @property {number} idleMaxMs pause between sections, at most
 * @property {string} markerDir where the exclusive marker files of critical sections live
 * @property {SdkVariant} sdk
 * @property {boolean} autoGo start the tasks at once (a respawned worker) instead of waiting for `go`
 * @property {string} dataTable the table of the fenced data items (`support/data-resource.mjs`)
 * @property {number} transactRate fraction of data writes made with `lock.transact()` (0 on servers without transactions)
 * @property {number} stallRate fraction of data writes that stop at a stall point before their request is sent
 */

/**
 * How an acquisition ended, as the worker classifies it (`died`: the harness saw its process die).
 * @typedef {'acquired' | 'busy' | 'aborted' | 'lock-error' | 'transient' | 'unexpected'} AttemptOutcome
 */

/**
 * What the worker's exclusive create of a key's marker file found.
 * @typedef {{ status: 'mine' | 'claimed' | 'busy' } | { status: 'taken', owner: string, leaseId: string, token: number }} MarkerClaim
 */

/**
 * One of the library's events (`onEvent`) as the worker keeps it; `t` in ms since the worker started.
 * @typedef {{ t: number, type: string, key?: string, via?: string, reason?: string, operation?: string,
 *   error?: string, fencingToken?: number, holder?: string }} LibraryEvent
 */

/**
 * The library's last warnings and errors in a worker.
 * @typedef {{ count: number, last: string[] }} Warnings
 */

/** @typedef {{ type: 'ready', dateNow: number, skewMs: number }} ReadyMessage after warming up; `dateNow` shows its (skewed) clock */
/** @typedef {{ type: 'attempt', attemptId: string, key: string }} AttemptMessage an acquisition begins */
/**
 * An acquisition ended.
 * @typedef {object} AttemptEndMessage
 * @property {'attempt-end'} type
 * @property {string} attemptId
 * @property {string} key
 * @property {AttemptOutcome} outcome
 * @property {number} waitedMs
 * @property {string} [leaseId] acquired
 * @property {number} [token] acquired: its fencing token
 * @property {string} [errorName]
 * @property {string} [message] unexpected errors and lock errors: the stack
 * @property {string} [holderOwner] busy: the holder the error names
 * @property {boolean} [sibling] another task of this process held or took the key meanwhile
 * @property {string[]} [warnings] busy naming this very process: its last warnings
 * @property {number} [startedAtMs]
 * @property {LibraryEvent[]} [events] busy: the library's events for the key meanwhile
 */
/**
 * A protected step (a request: answered with `{ re: id, accepted }`): `enter` begins a critical section.
 * @typedef {{ type: 'enter', id: number, key: string, leaseId: string, token: number, attemptId: string, gapMs: number,
 *   marker: MarkerClaim }} EnterMessage
 */
/**
 * A protected write (a request: answered with `{ re: id, accepted }`); `unchecked` ones follow no signal check.
 * `gapMs`: from the signal check to the send, on the worker's monotonic clock.
 * @typedef {{ type: 'write', id: number, key: string, leaseId: string, token: number, gapMs?: number,
 *   marker?: MarkerClaim, unchecked?: boolean }} WriteMessage
 */
/**
 * The section ends (a request: answered with `{ re: id, ok }`); `aborted`: the signal, checked after leaving.
 * @typedef {{ type: 'exit', id: number, key: string, leaseId: string, token: number, aborted: boolean, abandoned: boolean }} ExitMessage
 */
/**
 * The lock's signal aborted: no further checked write (`beforeEnter`: before the section began).
 * @typedef {{ type: 'abandon', leaseId: string, key: string, reason: string, beforeEnter?: boolean }} AbandonMessage
 */
/**
 * The first signal check after a freeze of a whole lease: `aborted` must be true (else the details).
 * @typedef {{ type: 'pause-check', leaseId: string, key: string, frozenMs: number, aborted: boolean, where?: string,
 *   heldForMs?: number, freezes?: number[][], events?: LibraryEvent[] }} PauseCheckMessage
 */
/**
 * A data write through the fence is about to be sent (`where`: after a checked write, or the section's
 * last write, made whatever the signal says).
 * @typedef {{ type: 'data-write', writeId: string, key: string, leaseId: string, token: number,
 *   via: 'fencedWrite' | 'transact', where: 'write' | 'last' }} DataWriteMessage
 */
/**
 * How a data write ended: `landed`; `fenced` (`LockFencedError`: a newer token on the item); `lost`
 * (`LockLostError`: the lock was no longer held, before or at the write); `conflict` (a transaction
 * cancelled by a concurrent write, `LockTransactionError`); `failed` (a transient error: it may or may
 * not have landed); `unexpected`.
 * @typedef {{ type: 'data-write-end', writeId: string, outcome: 'landed' | 'fenced' | 'lost' | 'conflict' | 'failed' | 'unexpected',
 *   errorName?: string, newerToken?: number, message?: string }} DataWriteEndMessage
 */
/**
 * A data write's request is about to leave the process, after the library's check (a request: answered
 * with `{ re: id, ok }`): the harness may SIGSTOP the worker there, past its lease, before it answers.
 * @typedef {{ type: 'stall-point', id: number }} StallPointMessage
 */
/** @typedef {{ type: 'released', leaseId: string, key: string, released: boolean }} ReleasedMessage `release()` returned */
/** @typedef {{ type: 'release-error', leaseId: string, key: string, errorName?: string, outcome: AttemptOutcome }} ReleaseErrorMessage */
/** @typedef {{ type: 'holding', key: string, leaseId: string, token: number }} HoldingMessage liveness: the key of a `hold` is taken */
/** @typedef {{ type: 'idle', heldCount: number, warnings: Warnings }} IdleMessage `quiesce` done: every task ended */
/** @typedef {{ type: 'closed', warnings: Warnings }} ClosedMessage `close` done; the process exits */
/** @typedef {{ type: 'crash', stack: string }} CrashMessage an uncaught error; the process exits (70) */
/** @typedef {{ type: 'note' }} NoteMessage */

/**
 * Everything a worker sends.
 * @typedef {ReadyMessage | AttemptMessage | AttemptEndMessage | EnterMessage | WriteMessage | ExitMessage | AbandonMessage
 *   | PauseCheckMessage | DataWriteMessage | DataWriteEndMessage | StallPointMessage | ReleasedMessage | ReleaseErrorMessage | HoldingMessage | IdleMessage | ClosedMessage | CrashMessage
 *   | NoteMessage} WorkerMessage
 */

/**
 * A request as the worker writes it; `rpc()` adds its `id`.
 * @typedef {Omit<EnterMessage, 'id'> | Omit<WriteMessage, 'id'> | Omit<ExitMessage, 'id'> | Omit<StallPointMessage, 'id'>} WorkerRequest
 */

/**
 * The harness's answer to a request: `accepted` for `enter` and `write`, `ok` for `exit`.
 * @typedef {{ re: number, accepted?: boolean, ok?: boolean }} WorkerReply
 */

/**
 * What the harness tells a worker: start the tasks; end them and report `idle`; take and keep one key
 * (liveness); close the manager and exit.
 * @typedef {{ cmd: 'go' } | { cmd: 'quiesce' } | { cmd: 'hold', key: string } | { cmd: 'close' }} WorkerCommand
 */

// ---- fault proxy ----

/** @typedef {Record<string, number>} FaultRates fraction of requests per fault kind (`FAULT_KINDS`) */
/** @typedef {{ latencyMinMs?: number, latencyMaxMs?: number, delayMinMs?: number, delayMaxMs?: number }} FaultTiming */

/**
 * The fault proxy's one argument.
 * @typedef {object} ProxyConfig
 * @property {string} target base URL of the real server
 * @property {number} [seed]
 * @property {{ key: string, token: string, data: string }} [attributes] the lock item's attribute names
 * @property {number} [port]
 * @property {FaultRates} [rates]
 * @property {FaultTiming} [timing]
 */

/**
 * Change the rates (and timing); report the counts so far; close.
 * @typedef {{ id: number } & ({ cmd: 'set', rates: FaultRates, timing?: FaultTiming } | { cmd: 'stats' } | { cmd: 'close' })} ProxyCommand
 */

/**
 * One request as the proxy saw it (`at`: epoch ms; `attempt`: the chaos attempt it is about; `holder`:
 * the attempt its answer showed holding the lock).
 * @typedef {{ at: number, owner?: string, key?: string, op: string, cond?: string, fault?: string,
 *   attempt?: string, status?: number, holder?: string }} TraceEntry
 */

/**
 * The proxy's counts.
 * @typedef {object} ProxyStats
 * @property {number} requests
 * @property {Record<string, number>} byOperation
 * @property {Record<string, number>} injected by fault kind
 * @property {Record<string, Record<string, number>>} injectedByOperation
 * @property {{ kind: string, operation: string, markers: string[], owner?: string, key?: string, at: number }[]} lostWrites
 *   writes the server applied whose answer the client never got (dropped) or got as an error (500)
 * @property {{ owner?: string, key?: string, operation: string, from: number, to: number }[]} delays responses held back past the lease
 * @property {Record<string, { owner: string, key?: string, at: number, count: number }>} evidence per attempt: the first
 *   answer delivered to its worker that showed the lock held by that very attempt
 * @property {TraceEntry[]} trace every request
 * @property {number} upstreamErrors
 * @property {FaultRates} [rates]
 */

/**
 * The proxy's answer to a {@link ProxyCommand}.
 * @typedef {{ re: number, ok: boolean, error?: string, stats?: ProxyStats, rates?: FaultRates }} ProxyReply
 */

export {};
