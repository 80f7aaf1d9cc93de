import { EventEmitter } from 'node:events';
import { setImmediate as turn } from 'node:timers/promises';
import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import { classifyTransportError, Transport, TransportError } from '../../../lib/gateway/transport.ts';
import { beingWritten } from '../../../lib/net/outbound.ts';

function coded(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe('classifyTransportError', () => {
  it.each([
    ['ECONNREFUSED', coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:4010')],
    ['ENOTFOUND', coded('ENOTFOUND', 'getaddrinfo ENOTFOUND sandbox.payhere.lk')],
    ['EAI_AGAIN', coded('EAI_AGAIN')],
    ['EHOSTUNREACH', coded('EHOSTUNREACH')],
    ['ENETUNREACH', coded('ENETUNREACH')],
    ['UND_ERR_CONNECT_TIMEOUT', new errors.ConnectTimeoutError()],
  ])('calls %s a connect failure that sent nothing', (code, error) => {
    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.kind).toBe('connect');
    expect(failure.reach).toBe('not_sent');
    expect(failure.code).toBe(code);
    expect(failure.cause).toBe(error);
  });

  it.each([
    ['UND_ERR_HEADERS_TIMEOUT', new errors.HeadersTimeoutError()],
    ['UND_ERR_BODY_TIMEOUT', new errors.BodyTimeoutError()],
    ['UND_ERR_ABORTED', new errors.RequestAbortedError()],
    ['ETIMEDOUT', coded('ETIMEDOUT')],
  ])('calls %s a timeout that may have sent the request', (code, error) => {
    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('timeout');
    expect(failure.reach).toBe('lost');
    expect(failure.code).toBe(code);
  });

  it('calls the abort of AbortSignal.timeout a timeout that may have sent the request', () => {
    // Prepare
    const error = new DOMException('The operation was aborted due to timeout', 'TimeoutError');

    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('timeout');
    expect(failure.reach).toBe('lost');
  });

  it('calls an AbortError a timeout that may have sent the request', () => {
    // Act
    const failure = classifyTransportError(new DOMException('This operation was aborted', 'AbortError'));

    // Assess
    expect(failure.kind).toBe('timeout');
    expect(failure.reach).toBe('lost');
  });

  it.each([
    ['ECONNRESET', coded('ECONNRESET', 'read ECONNRESET')],
    ['EPIPE', coded('EPIPE')],
    ['UND_ERR_SOCKET', new errors.SocketError('other side closed')],
    ['UND_ERR_CLOSED', new errors.ClientClosedError()],
    ['UND_ERR_DESTROYED', new errors.ClientDestroyedError()],
  ])('calls %s a reset that may have sent the request', (code, error) => {
    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('reset');
    expect(failure.reach).toBe('lost');
    expect(failure.code).toBe(code);
  });

  it.each([
    ['an unknown code', coded('HPE_INVALID_CONSTANT')],
    ['a response too large', new errors.ResponseExceededMaxSizeError()],
    ['a plain Error', new Error('something odd')],
    ['a string', 'boom'],
    ['null', null],
    ['undefined', undefined],
  ])('calls %s a protocol failure that may have sent the request', (_, error) => {
    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('protocol');
    expect(failure.reach).toBe('lost');
  });

  it('finds the code of a connect failure wrapped in a cause', () => {
    // Prepare
    const error = new TypeError('fetch failed', {
      cause: coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:4010'),
    });

    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('connect');
    expect(failure.reach).toBe('not_sent');
    expect(failure.code).toBe('ECONNREFUSED');
  });

  it('finds a code several causes deep', () => {
    // Prepare
    const error = new Error('request failed', {
      cause: new Error('socket failed', { cause: new errors.SocketError('other side closed') }),
    });

    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('reset');
    expect(failure.code).toBe('UND_ERR_SOCKET');
  });

  it('does not loop on an error that is its own cause', () => {
    // Prepare
    const error = new Error('odd');
    Object.assign(error, { cause: error });

    // Act
    const failure = classifyTransportError(error);

    // Assess
    expect(failure.kind).toBe('protocol');
  });

  it('passes a TransportError through unchanged', () => {
    // Prepare
    const original = new TransportError('timeout', 'DEADLINE_EXCEEDED', undefined);

    // Act
    const failure = classifyTransportError(original);

    // Assess
    expect(failure).toBe(original);
  });

  it('names the kind and code in its message, for the log', () => {
    expect(classifyTransportError(coded('ECONNRESET')).message).toBe('upstream reset failure (ECONNRESET)');
  });
});

describe('Transport.preload', () => {
  it('loads undici only once the requests on their way have been written, so as not to hold them', async () => {
    // Prepare: undici loaded once (the wait below is then the only one), and a request (the
    // budget's slot, say) not yet written to its new connection.
    await new Transport('http://127.0.0.1:9', { connectTimeoutMs: 1_000 }).preload();
    const slot = new EventEmitter();
    beingWritten(slot);
    const transport = new Transport('http://127.0.0.1:9', { connectTimeoutMs: 1_000 });
    let loaded = false;

    // Act
    const preloading = transport.preload().then(() => {
      loaded = true;
    });
    for (let i = 0; i < 5; i++) await turn();

    // Assess
    expect(loaded).toBe(false);
    slot.emit('finish');
    await preloading;
    expect(loaded).toBe(true);
  });
});
