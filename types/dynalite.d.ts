/** Minimal typings for dynalite (an in-memory DynamoDB implementation). */
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    /** LevelDB directory; omit for an in-memory store. */
    path?: string;
    /** Milliseconds a table stays CREATING (default 500). */
    createTableMs?: number;
    /** Milliseconds a table stays DELETING (default 500). */
    deleteTableMs?: number;
    /** Milliseconds a table stays UPDATING (default 500). */
    updateTableMs?: number;
    maxItemSizeKb?: number;
    ssl?: boolean;
    verbose?: boolean;
    debug?: boolean;
  }

  function dynalite(options?: DynaliteOptions): Server;

  export = dynalite;
}
