/**
 * Imported first by each function that calls PayHere: PayHere's connection (GATEWAY_BASE_URL)
 * starts opening before the rest of the function's code is evaluated, so that its TCP and TLS
 * handshakes overlap the whole of a cold container's import; the function's transport takes it for
 * its first call (lib/gateway/transport.ts). Only a socket: nothing is sent on it before a call.
 */
import { connectAtStart } from './early-connection.ts';

connectAtStart(process.env.GATEWAY_BASE_URL);
