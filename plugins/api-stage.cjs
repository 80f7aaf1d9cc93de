'use strict';

/**
 * osls lets the REST API's Deployment create the stage, which leaves no place for stage settings
 * in CloudFormation (a Deployment's StageDescription is not applied when a later deploy reuses
 * the stage). This plugin declares the stage as its own AWS::ApiGateway::Stage with throttling
 * for every method (`custom.apiStage.throttle`), tighter for the routes that spend PayHere's
 * budget (`custom.apiStage.budgetRoutes`), and makes the Deployment wait for the gateway
 * responses, which otherwise go live only with the deploy after the one that created them.
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
   * The routes each request of which costs PayHere a call (`custom.apiStage.budgetRoutes`): each
   * throttled to about what PayHere's budget serves, instead of the stage's default.
   */
  budgetRouteSettings() {
    const group = this.serverless.service.custom?.apiStage?.budgetRoutes;
    if (!group) return [];
    const { rateLimit, burstLimit } = this.limits(group, 'custom.apiStage.budgetRoutes');
    return (group.routes ?? []).map((route) => {
      const match = /^(GET|POST|PUT|PATCH|DELETE) (\/\S+)$/.exec(String(route));
      if (!match) {
        throw new this.serverless.classes.Error(
          `custom.apiStage.budgetRoutes: "${route}" must look like "GET /gateway/api/subscriptions".`,
        );
      }
      return {
        // API Gateway's encoding of a resource path in method settings: "/" + the path with every "/"
        // as "~1" (/a/b is /~1a~1b).
        ResourcePath: `/${match[2].replaceAll('/', '~1')}`,
        HttpMethod: match[1],
        ThrottlingRateLimit: rateLimit,
        ThrottlingBurstLimit: burstLimit,
      };
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

    resources.ApiGatewayStage = {
      Type: 'AWS::ApiGateway::Stage',
      Properties: {
        RestApiId: deployment.Properties.RestApiId,
        DeploymentId: { Ref: deploymentId },
        StageName: stageName,
        MethodSettings: [
          {
            ResourcePath: '/*',
            HttpMethod: '*',
            ThrottlingRateLimit: rateLimit,
            ThrottlingBurstLimit: burstLimit,
          },
          ...this.budgetRouteSettings(),
        ],
      },
    };
  }
}

module.exports = ApiStagePlugin;
