'use strict';

/**
 * Routes as serverless.yml's custom settings name them ("GET /gateway/api/subscriptions"), and the
 * API Gateway methods of a compiled template under the same names, for the plugins that set
 * something on some routes only (plugins/api-stage.cjs, plugins/bearer-gate.cjs, plugins/waf.cjs).
 */
const ROUTE = /^(GET|POST|PUT|PATCH|DELETE) (\/\S+)$/;

/** `{ method, path }` of `route`, or the plugin's error naming `where` it was written. */
function parseRoute(serverless, route, where) {
  const match = ROUTE.exec(String(route));
  if (!match) {
    throw new serverless.classes.Error(
      `${where}: "${route}" must look like "GET /gateway/api/subscriptions".`,
    );
  }
  return { method: match[1], path: match[2] };
}

/**
 * Each method of the template but CORS preflights, as `{ id, method, path }`: its logical id, its
 * HTTP method and the path its resource's PathParts spell from the API's root.
 */
function apiMethods(resources) {
  const pathOf = (resourceId) => {
    const parts = [];
    for (let ref = resourceId; ref?.Ref; ref = resources[ref.Ref].Properties.ParentId) {
      parts.unshift(resources[ref.Ref].Properties.PathPart);
    }
    return `/${parts.join('/')}`;
  };
  return Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::ApiGateway::Method' && r.Properties.HttpMethod !== 'OPTIONS')
    .map(([id, r]) => ({ id, method: r.Properties.HttpMethod, path: pathOf(r.Properties.ResourceId) }));
}

/**
 * The methods `routes` name, each parsed and looked up: a route the template does not have is an
 * error (a typo would otherwise leave the route it meant without its setting).
 */
function namedMethods(serverless, routes, where) {
  const methods = apiMethods(serverless.service.provider.compiledCloudFormationTemplate.Resources);
  return (routes ?? []).map((route) => {
    const { method, path } = parseRoute(serverless, route, where);
    const found = methods.find((m) => m.method === method && m.path === path);
    if (!found) throw new serverless.classes.Error(`${where}: "${route}" is no route of this service.`);
    return found;
  });
}

module.exports = { parseRoute, apiMethods, namedMethods };
