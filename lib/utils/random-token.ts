import { randomFillSync } from 'node:crypto';

/** Bytes per token (128 bits). */
const TOKEN_BYTES = 16;
/** Tokens drawn from the CSPRNG at once: one call per 256 tokens instead of one per token. */
const POOL_BYTES = TOKEN_BYTES * 256;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

/**
 * An unguessable token from the CSPRNG (128 bits, hex). Used for owner tokens and record
 * version numbers, so no other client can forge a condition that matches ours. Hex, so a lease
 * id never starts with `-` and survives any shell or argument parser. Drawn from a pool refilled
 * from the CSPRNG (as `crypto.randomUUID()` does): a lock cycle draws three, and one CSPRNG call
 * each cost more than the rest of their write's preparation. Every byte is used once.
 */
export function randomToken(): string {
  if (offset === POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const start = offset;
  offset += TOKEN_BYTES;
  return pool.toString('hex', start, offset);
}
