/**
 * Requests still being written: from their creation until their last byte is handed to the socket
 * (or they fail). A connection, and a TLS handshake, move only when the event loop is free, so
 * work that holds the loop for a while (undici's first evaluation, lib/gateway/transport.ts) waits
 * for them: started at once, it would hold the requests it means to overlap behind it.
 */
let writing = 0;
let waiting: Array<() => void> = [];

interface Writable {
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

/** Count `request` until it has been written (`finish`) or has ended otherwise (`close`). */
export function beingWritten(request: Writable): void {
  writing++;
  let done = false;
  const written = () => {
    if (done) return;
    done = true;
    writing--;
    if (writing > 0) return;
    const resolve = waiting;
    waiting = [];
    for (const wake of resolve) wake();
  };
  request.once('finish', written);
  request.once('close', written);
}

/** Resolves once no request counted by beingWritten is still being written: at once if none is. */
export function allWritten(): Promise<void> {
  if (writing === 0) return Promise.resolve();
  return new Promise((resolve) => waiting.push(resolve));
}
