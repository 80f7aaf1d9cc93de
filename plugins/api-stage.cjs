'use strict';

/**
 * osls lets the REST API's Deployment create the stage, which leaves no place for stage settings
 * in CloudFormation (a Deployment's StageDescription is not applied when a later deploy reuses
 * the stage). This plugin declares the stage as its own AWS::ApiGateway::Stage with throttling
 * for every method (`custom.apiStage.throttle`), and makes the Deployment wait for the gateway
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

  throttle() {
    const throttle = this.serverless.service.custom?.apiStage?.throttle ?? {};
    const rateLimit = Number(throttle.rateLimit);
    const burstLimit = Number(throttle.burstLimit);
    if (!(rateLimit > 0) || !Number.isInteger(burstLimit) || burstLimit < 1) {
      throw new this.serverless.classes.Error(
        'custom.apiStage.throttle needs rateLimit (requests per second > 0) and burstLimit (an integer >= 1).',
      );
    }
    return { rateLimit, burstLimit };
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
        ],
      },
    };
  }
}

module.exports = ApiStagePlugin;
