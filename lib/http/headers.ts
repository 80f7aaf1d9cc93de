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
  const values: string[] = [];
  const multi = event.multiValueHeaders ?? {};
  for (const header of Object.keys(multi)) {
    if (header.toLowerCase() === wanted) values.push(...(multi[header] ?? []));
  }
  if (values.length > 0) return values;
  const single = event.headers ?? {};
  for (const header of Object.keys(single)) {
    const value = single[header];
    if (value !== undefined && header.toLowerCase() === wanted) values.push(value);
  }
  return values;
}

/**
 * Whether the request declares its body as `mediaType`, once: exactly one Content-Type, whose
 * media type (its parameters aside, in any letter case) is that one.
 */
export function declaresMediaType(
  event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>,
  mediaType: string,
): boolean {
  const types = headerValues(event, 'content-type');
  return types.length === 1 && types[0]!.split(';')[0]!.trim().toLowerCase() === mediaType;
}
