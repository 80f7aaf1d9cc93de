'use strict';

const { namedMethods } = require('./routes.cjs');

/**
 * The groups of routes throttled apart from the stage's default, each sized to what bounds it
 * (docs/operator.md "Strangers at the edge"): the reads PayHere answers unless their answer is
 * shared; the reads the ledger answers (getCheckout); PayHere's notifications, at what PayHere
 * sends rather than what the app does.
 */
const ROUTE_GROUPS = ['readRoutes', 'ledgerRoutes', 'notifyRoutes'];

/**
 * One access log line per request, JSON, with the address it came from: what a stranger sent,
 * and what API Gateway (or AWS WAF) answered before any function ran, are in no function's log.
 */
const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  sourceIp: '$context.identity.sourceIp',
  time: '$context.requestTimeEpoch',
  method: '$context.httpMethod',
  route: '$context.resourcePath',
  status: '$context.status',
  responseType: '$context.error.responseType',
  waf: '$context.wafResponseCode',
  latency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
});
const ACCESS_LOG_GROUP = 'ApiGatewayAccessLogGroup';

/**
 * osls lets the REST API's Deployment create the stage, which leaves no place for stage settings
 * in CloudFormation (a Deployment's StageDescription is not applied when a later deploy reuses
 * the stage). This plugin declares the stage as its own AWS::ApiGateway::Stage with throttling
 * for every method (`custom.apiStage.throttle`), apart for the groups of ROUTE_GROUPS, access logs
 * with the source address in a log group of its own (kept as long as the functions' logs), and
 * makes the Deployment wait for the gateway responses, which otherwise go live only with the
 * deploy after the one that created them.
 *
 * A stack whose stage was already created by a Deployment cannot adopt it this way; this
 * service declared its stage like this from its first deploy.
 */
class ApiStagePlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      'after:aws:package:finalize:mergeCustomProviderResources': () => this.declareStage(),
    };
  }

  /** `{ rateLimit, burstLimit }` of `settings`, checked; `where` names it in the error. */
  limits(settings, where) {
    const rateLimit = Number(settings?.rateLimit);
    const burstLimit = Number(settings?.burstLimit);
    if (!(rateLimit > 0) || !Number.isInteger(burstLimit) || burstLimit < 1) {
      throw new this.serverless.classes.Error(
        `${where} needs rateLimit (requests per second > 0) and burstLimit (an integer >= 1).`,
      );
    }
    return { rateLimit, burstLimit };
  }

  throttle() {
    return this.limits(this.serverless.service.custom?.apiStage?.throttle ?? {}, 'custom.apiStage.throttle');
  }

  /**
   * The routes throttled apart from the stage's default (`custom.apiStage.<group>` of ROUTE_GROUPS):
   * each method its own bucket of the group's limits. A route named by no method of the API, or by
   * two groups, is refused.
   */
  routeSettings() {
    const seen = new Set();
    return ROUTE_GROUPS.flatMap((key) => {
      const group = this.serverless.service.custom?.apiStage?.[key];
      if (!group) return [];
      const where = `custom.apiStage.${key}`;
      const { rateLimit, burstLimit } = this.limits(group, where);
      return namedMethods(this.serverless, group.routes, where).map(({ method, path }) => {
        const route = `${method} ${path}`;
        if (seen.has(route)) {
          throw new this.serverless.classes.Error(`${where}: "${route}" is throttled by another group too.`);
        }
        seen.add(route);
        return {
          // API Gateway's encoding of a resource path in method settings: "/" + the path with every
          // "/" as "~1" (/a/b is /~1a~1b).
          ResourcePath: `/${path.replaceAll('/', '~1')}`,
          HttpMethod: method,
          ThrottlingRateLimit: rateLimit,
          ThrottlingBurstLimit: burstLimit,
        };
      });
    });
  }

  declareStage() {
    const template = this.serverless.service.provider.compiledCloudFormationTemplate;
    const resources = template.Resources;
    const deployments = Object.keys(resources).filter(
      (id) => resources[id].Type === 'AWS::ApiGateway::Deployment',
    );
    if (deployments.length !== 1) return;
    const deploymentId = deployments[0];
    const deployment = resources[deploymentId];
    const { rateLimit, burstLimit } = this.throttle();

    const stageName = deployment.Properties.StageName;
    delete deployment.Properties.StageName;
    const responses = Object.keys(resources).filter(
      (id) => resources[id].Type === 'AWS::ApiGateway::GatewayResponse',
    );
    deployment.DependsOn = [...new Set([...[deployment.DependsOn ?? []].flat(), ...responses])];

    const service = this.serverless.service.service;
    resources[ACCESS_LOG_GROUP] = {
      Type: 'AWS::Logs::LogGroup',
      Properties: {
        LogGroupName: `/aws/api-gateway/${service}-${stageName}-access`,
        RetentionInDays: Number(this.serverless.service.provider.logRetentionInDays ?? 365),
      },
    };
    resources.ApiGatewayStage = {
      Type: 'AWS::ApiGateway::Stage',
      Properties: {
        RestApiId: deployment.Properties.RestApiId,
        DeploymentId: { Ref: deploymentId },
        StageName: stageName,
        AccessLogSetting: {
          // The log group's ARN without the `:*` its Arn attribute ends with.
          DestinationArn: {
            'Fn::Sub': `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:\${${ACCESS_LOG_GROUP}}`,
          },
          Format: ACCESS_LOG_FORMAT,
        },
        MethodSettings: [
          {
            ResourcePath: '/*',
            HttpMethod: '*',
            ThrottlingRateLimit: rateLimit,
            ThrottlingBurstLimit: burstLimit,
          },
          ...this.routeSettings(),
        ],
      },
    };
  }
}

module.exports = ApiStagePlugin;
module.exports.ACCESS_LOG_FORMAT = ACCESS_LOG_FORMAT;
