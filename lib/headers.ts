import type { APIGatewayProxyEvent } from 'aws-lambda';

/**
 * Every value a request carries for header `name` (matched in any letter case). API Gateway keeps
 * only the last of repeated headers in `headers`; `multiValueHeaders` has them all, so it is read
 * first and `headers` serves events that have no multi-value map.
 */
export function headerValues(
  event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>,
  name: string,
): string[] {
  const wanted = name.toLowerCase();
  const fromMulti = Object.entries(event.multiValueHeaders ?? {})
    .filter(([header]) => header.toLowerCase() === wanted)
    .flatMap(([, values]) => values ?? []);
  if (fromMulti.length > 0) return fromMulti;
  return Object.entries(event.headers ?? {})
    .filter(([header, value]) => header.toLowerCase() === wanted && value !== undefined)
    .map(([, value]) => value as string);
}
