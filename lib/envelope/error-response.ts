import type { APIGatewayProxyResult } from 'aws-lambda';
import { describeError, log } from '../log/log.ts';
import { respond } from './envelope.ts';
import { ApiError, InternalError, InvalidJsonError, UnsupportedMediaTypeError } from './errors.ts';

/** The one place where any error becomes its envelope and HTTP status (docs/contract.md "Failures"). */
export function errorResponse(error: unknown): APIGatewayProxyResult {
  const apiError = toApiError(error);
  if (apiError.httpStatus >= 500 || apiError.code === 'outcome_unknown') {
    log.error('request failed', { code: apiError.code, error: describeError(error) });
  } else {
    log.info('request refused', { code: apiError.code, httpStatus: apiError.httpStatus });
  }
  return apiErrorAnswer(apiError);
}

/** A refusal's answer, without logging it: also what plugins/waf.cjs has AWS WAF answer in its stead. */
export function apiErrorAnswer(apiError: ApiError): APIGatewayProxyResult {
  return respond(
    apiError.httpStatus,
    { status: apiError.status, msg: apiError.message, data: { code: apiError.code, ...apiError.details } },
    apiError.headers,
  );
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const middyParser = (error as { cause?: { package?: unknown } } | null)?.cause?.package;
  if (middyParser === '@middy/http-json-body-parser') {
    // middy answers 415 to a wrong media type and to bad JSON alike; docs/contract.md "Failures" does not.
    return (error as Error).message === 'Unsupported Media Type'
      ? new UnsupportedMediaTypeError()
      : new InvalidJsonError();
  }
  return new InternalError(error);
}
