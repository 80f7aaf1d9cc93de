'use strict';

const { apiMethods, namedMethods } = require('./routes.cjs');

/**
 * API Gateway answers a request without an Authorization header itself, before any function runs:
 * every method but those `custom.bearerGate.open` lists (PayHere's notifications, authenticated by
 * their signature) requires the header, checked by a request validator of parameters only. The
 * functions still verify the token (docs/contract.md "Authentication"); this keeps anonymous requests from
 * invoking them at all. serverless.yml's BAD_REQUEST_PARAMETERS gateway response answers it as a
 * function would, 401 `unauthorized`: the header is the only parameter any method requires.
 *
 *   bearerGate:
 *     open: [POST /gateway/notify]
 *
 * It is added to the packaged template only, so serverless-offline never sees it: under npm start
 * the function gives the same answer.
 */
const VALIDATOR = 'ApiGatewayBearerHeaderValidator';
const AUTHORIZATION = 'method.request.header.Authorization';

class BearerGatePlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      'after:aws:package:finalize:mergeCustomProviderResources': () => this.requireBearerHeader(),
    };
  }

  requireBearerHeader() {
    const resources = this.serverless.service.provider.compiledCloudFormationTemplate.Resources;
    const open = new Set(
      namedMethods(
        this.serverless,
        this.serverless.service.custom?.bearerGate?.open,
        'custom.bearerGate.open',
      ).map(({ id }) => id),
    );
    const gated = apiMethods(resources).filter(({ id }) => !open.has(id));
    if (gated.length === 0) return;
    resources[VALIDATOR] = {
      Type: 'AWS::ApiGateway::RequestValidator',
      Properties: {
        RestApiId: resources[gated[0].id].Properties.RestApiId,
        Name: 'bearer-header',
        ValidateRequestParameters: true,
        // The functions validate bodies (zod, unknown fields refused); API Gateway never does.
        ValidateRequestBody: false,
      },
    };
    for (const { id } of gated) {
      const method = resources[id].Properties;
      if (method.RequestValidatorId) {
        throw new this.serverless.classes.Error(
          `plugins/bearer-gate.cjs: ${id} already has a request validator; the bearer gate would replace it.`,
        );
      }
      method.RequestParameters = { ...method.RequestParameters, [AUTHORIZATION]: true };
      method.RequestValidatorId = { Ref: VALIDATOR };
    }
  }
}

module.exports = BearerGatePlugin;
