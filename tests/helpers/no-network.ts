import dns from 'node:dns';
import net from 'node:net';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/**
 * Runs `work` with every outbound connection and DNS lookup in this process refused, except on
 * loopback, and answers what was attempted: a check that a library (a linter, a validator) works
 * offline and does not try to phone home.
 */
export async function withoutNetwork<T>(work: () => Promise<T>): Promise<{ result: T; attempts: string[] }> {
  const attempts: string[] = [];
  const connect = net.Socket.prototype.connect;
  const lookup = dns.lookup;
  const fetch = globalThis.fetch;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    const [first, second] = args as [unknown, unknown];
    const options =
      typeof first === 'object' && first !== null ? (first as net.TcpNetConnectOpts) : undefined;
    const host = options ? (options.host ?? 'localhost') : typeof second === 'string' ? second : 'localhost';
    if (!LOOPBACK.test(host)) {
      attempts.push(`connect ${host}`);
      throw new Error(`network refused: ${host}`);
    }
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof connect;
  dns.lookup = ((hostname: string, ...rest: unknown[]) => {
    if (!LOOPBACK.test(hostname)) {
      attempts.push(`lookup ${hostname}`);
      throw new Error(`network refused: ${hostname}`);
    }
    return (lookup as (...a: unknown[]) => unknown)(hostname, ...rest);
  }) as typeof dns.lookup;
  globalThis.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!LOOPBACK.test(url.hostname.replace(/^\[|\]$/g, ''))) {
      attempts.push(`fetch ${url.origin}`);
      throw new Error(`network refused: ${url.origin}`);
    }
    return fetch(input, init);
  };
  try {
    return { result: await work(), attempts };
  } finally {
    net.Socket.prototype.connect = connect;
    dns.lookup = lookup;
    globalThis.fetch = fetch;
  }
}
