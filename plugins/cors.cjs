'use strict';

/**
 * CORS is off unless `custom.cors.origins` (CORS_ORIGINS) lists origins: native apps need none, and
 * then no route has an OPTIONS method. With origins, every http event gets API Gateway's preflight
 * for exactly those origins and `custom.cors.headers`; the functions answer the requests themselves
 * with the same list (lib/http/cors.ts reads CORS_ORIGINS from their environment).
 *
 *   cors:
 *     origins: https://app.example.com,https://admin.example.com
 *     headers: [Authorization, Content-Type]
 *     maxAge: 600
 *
 * The list is checked by lib/config/config.ts's `httpsOrigins`, the rule the functions apply at
 * start-up. The preflight answers also carry `Cache-Control: no-store` and `nosniff`, like every
 * other answer of the API.
 */
class CorsPlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      // Before `package` compiles the events and before serverless-offline reads them.
      initialize: () => this.declarePreflights(),
      'after:aws:package:finalize:mergeCustomProviderResources': () => this.addAnswerHeaders(),
    };
  }

  async origins() {
    const { ConfigError, httpsOrigins } = await import('../lib/config/config.ts');
    try {
      return httpsOrigins('CORS_ORIGINS', String(this.serverless.service.custom?.cors?.origins ?? ''));
    } catch (error) {
      if (error instanceof ConfigError) throw new this.serverless.classes.Error(error.message);
      throw error;
    }
  }

  async declarePreflights() {
    const origins = await this.origins();
    if (origins.length === 0) return;
    const { headers, maxAge } = this.serverless.service.custom.cors;
    for (const name of this.serverless.service.getAllFunctions()) {
      for (const event of this.serverless.service.getFunction(name).events ?? []) {
        if (!event.http) continue;
        event.http.cors = { origins, headers, maxAge, allowCredentials: false, cacheControl: 'no-store' };
      }
    }
  }

  addAnswerHeaders() {
    const resources = this.serverless.service.provider.compiledCloudFormationTemplate.Resources;
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::ApiGateway::Method' || resource.Properties.HttpMethod !== 'OPTIONS')
        continue;
      for (const response of resource.Properties.MethodResponses) {
        response.ResponseParameters['method.response.header.X-Content-Type-Options'] = true;
      }
      for (const response of resource.Properties.Integration.IntegrationResponses) {
        response.ResponseParameters['method.response.header.X-Content-Type-Options'] = "'nosniff'";
      }
    }
  }
}

module.exports = CorsPlugin;
