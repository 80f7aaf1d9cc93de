/**
 * Imported first by each function that calls PayHere: PayHere's connection (GATEWAY_BASE_URL)
 * starts opening before the rest of the function's code is evaluated, so that its TCP handshake
 * overlaps a cold container's import (its TLS handshake follows once the import has given the event
 * loop back); the function's transport takes it for its first call (lib/gateway/transport.ts). Only
 * a socket: nothing is sent on it before a call. The import waits here (a top-level await) until
 * connect(2) has been issued, which Node does on a later turn of the event loop than the one that
 * asked for it: without the wait, no turn comes until the whole bundle has been evaluated.
 */
import { connectAtStart } from './early-connection.ts';

await connectAtStart(process.env.GATEWAY_BASE_URL);
