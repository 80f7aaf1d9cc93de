import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { errorResponse } from '../envelope/error-response.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

/** Any error, thrown anywhere in the stack, becomes the envelope (middy's own handler writes plain text). */
export const envelopeErrors = (): MiddlewareObj<Event, Result> => ({
  name: 'envelopeErrors',
  onError: (request) => {
    request.response = errorResponse(request.error);
  },
});
