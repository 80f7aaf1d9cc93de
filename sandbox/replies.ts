// Answers as PayHere shapes them, built as values so a fault can replace one before it is sent.
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Envelope } from './records.ts';

export interface Reply {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

export function jsonReply(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return {
    status,
    contentType: 'application/json',
    body: JSON.stringify(value),
    ...(headers ? { headers } : {}),
  };
}

export function envelopeReply(envelope: Envelope, status = 200): Reply {
  return jsonReply(status, envelope);
}

export function failureReply(status: number, msg: string): Reply {
  return jsonReply(status, { status: -1, msg, data: null });
}

export function invalidParameter(field: string): Reply {
  return failureReply(400, `Invalid request parameter: ${field}`);
}

export function notFound(): Reply {
  return failureReply(404, 'Not found');
}

export function tooManyRequests(retryAfterSeconds: number): Reply {
  return jsonReply(
    429,
    { status: -1, msg: 'Too many requests', data: null },
    { 'retry-after': String(retryAfterSeconds) },
  );
}

/** OAuth errors do not use the envelope (docs/payhere.md "Access token"). */
export function oauthError(status: number, error: string, description: string): Reply {
  const challenge = status === 401 ? { 'www-authenticate': `Bearer error="${error}"` } : undefined;
  return jsonReply(status, { error, error_description: description }, challenge);
}

export function expiredToken(token: string): Reply {
  return oauthError(401, 'invalid_token', `Access token expired: ${token}`);
}

/** What a proxy in front of the gateway answers when something behind it fails. */
export function htmlPage(status: number): Reply {
  const title = `${status} ${STATUS_CODES[status] ?? 'Error'}`;
  return {
    status,
    contentType: 'text/html',
    body: `<html><head><title>${title}</title></head><body><center><h1>${title}</h1></center><hr><center>nginx</center></body></html>`,
  };
}

export function maintenancePage(): Reply {
  return {
    status: 200,
    contentType: 'text/html; charset=UTF-8',
    body: '<!DOCTYPE html><html><head><title>PayHere - Under Maintenance</title></head><body><h1>We will be back soon</h1></body></html>',
  };
}

export function send(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(reply.status, {
    ...reply.headers,
    'content-type': reply.contentType,
    'content-length': Buffer.byteLength(reply.body),
  });
  res.end(reply.body);
}
