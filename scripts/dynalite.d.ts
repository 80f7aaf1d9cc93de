/** dynalite ships no types; this is the part of its API the local runs and tests use. */
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    /** How long a new table stays CREATING (default 500 ms). */
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    /** LevelDB directory; in memory when absent. */
    path?: string;
  }

  export default function dynalite(options?: DynaliteOptions): Server;
}
