// undici's modules on their own (lib/gateway/transport.ts loads these rather than the main entry):
// the class the main entry exports as Pool, and the connector a Pool builds by default.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';

  const PoolModule: typeof Pool;
  export default PoolModule;
}

declare module 'undici/lib/core/connect.js' {
  import type { buildConnector } from 'undici';

  const connect: typeof buildConnector;
  export default connect;
}
