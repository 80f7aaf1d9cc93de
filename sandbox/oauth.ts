// The token endpoint and the bearer check in front of every other endpoint.

import { jsonReply, oauthError, type Reply } from './replies.ts';
import type { AccessTokens } from './tokens.ts';

export interface AppCredentials {
  appId: string;
  appSecret: string;
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function basicCredentials(authorization: string | undefined): AppCredentials | undefined {
  const match = /^basic\s+(\S+)$/i.exec(authorization ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { appId: decoded.slice(0, colon), appSecret: decoded.slice(colon + 1) };
}

export interface TokenRequest {
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

export function issueToken(request: TokenRequest, credentials: AppCredentials, tokens: AccessTokens): Reply {
  const presented = basicCredentials(request.authorization);
  if (presented?.appId !== credentials.appId || presented.appSecret !== credentials.appSecret) {
    return {
      ...oauthError(401, 'invalid_client', 'Bad client credentials'),
      headers: { 'www-authenticate': 'Basic realm="oauth2/client"' },
    };
  }
  if (mediaType(request.contentType) !== 'application/x-www-form-urlencoded') {
    return oauthError(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const grantType = new URLSearchParams(request.body).get('grant_type');
  if (!grantType) return oauthError(400, 'invalid_request', 'Missing grant type');
  if (grantType !== 'client_credentials') {
    return oauthError(400, 'unsupported_grant_type', `Unsupported grant type: ${grantType}`);
  }
  const { token, expiresInSeconds } = tokens.issue();
  return jsonReply(
    200,
    { access_token: token, token_type: 'bearer', expires_in: expiresInSeconds, scope: 'SANDBOX' },
    { 'cache-control': 'no-store' },
  );
}

/** The rejection for a request without a valid bearer token, or undefined when the token is valid. */
export function rejectBearer(authorization: string | undefined, tokens: AccessTokens): Reply | undefined {
  const match = /^bearer\s+(\S+)$/i.exec(authorization ?? '');
  const token = match?.[1];
  if (!token) {
    return oauthError(401, 'unauthorized', 'Full authentication is required to access this resource');
  }
  const check = tokens.check(token);
  if (check === 'unknown') return oauthError(401, 'invalid_token', `Invalid access token: ${token}`);
  if (check === 'expired') return oauthError(401, 'invalid_token', `Access token expired: ${token}`);
  return undefined;
}

/** The token a request presents, for the `invalidToken` fault's message. */
export function bearerToken(authorization: string | undefined): string {
  return /^bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1] ?? '';
}
