'use strict';

/**
 * What a stage must satisfy before it is packaged or deployed, checked where its template is built
 * (the functions check the same variables again at start-up, with the same rules):
 *
 * - the stage `local` (npm start, the tests) is never deployed: its functions take the gateway
 *   credentials from the environment, so a deploy would write them into the template;
 * - any other stage names its gateway: no silent fallback to PayHere's sandbox, where every charge
 *   "succeeds" and nothing is collected;
 * - the gateway and the JWKS are reached over https (http only on loopback): the app credentials
 *   and the token keys must not travel in clear;
 * - the logs, which hold the audit trail, are kept for a period CloudWatch Logs offers, and the
 *   alarms' topic, when given, is an SNS topic's ARN.
 *
 * The URL rule is lib/config/config.ts's `httpsUrl`, imported as it is (Node runs TypeScript), so
 * that a deploy and a cold start can never disagree.
 */
const LOCAL_STAGE = 'local';
/** The retention periods CloudWatch Logs accepts, in days. */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];
const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/;

class DeployGuardPlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      initialize: () => this.refuseLocalDeploy(),
      'before:package:initialize': () => this.checkConfiguration(),
      'before:deploy:function:initialize': () => this.checkConfiguration(),
    };
  }

  stage() {
    return this.serverless.getProvider('aws').getStage();
  }

  /** `deploy` and `deploy function` alike. */
  refuseLocalDeploy() {
    const [command] = this.serverless.processedInput?.commands ?? [];
    if (command === 'deploy' && this.stage() === LOCAL_STAGE) {
      throw new this.serverless.classes.Error(
        'The stage "local" is for npm start and the tests only and is never deployed: its functions ' +
          'read the gateway credentials from the environment. Deploy a stage of its own, e.g. --stage prod.',
      );
    }
  }

  async checkConfiguration() {
    const environment = this.serverless.service.provider.environment ?? {};
    const gatewayBaseUrl = String(environment.GATEWAY_BASE_URL ?? '').trim();
    if (!gatewayBaseUrl) {
      throw new this.serverless.classes.Error(
        `GATEWAY_BASE_URL is not set: the stage "${this.stage()}" must name its gateway, ` +
          "https://www.payhere.lk for PayHere's live API or https://sandbox.payhere.lk for its sandbox. " +
          'Only --stage local falls back to the sandbox.',
      );
    }
    this.checkOperations();
    const { ConfigError, httpsOrigins, httpsUrl } = await import('../lib/config/config.ts');
    try {
      httpsUrl('GATEWAY_BASE_URL', gatewayBaseUrl);
      for (const name of ['AUTH_JWKS_URL', 'PUBLIC_BASE_URL']) {
        const url = String(environment[name] ?? '').trim();
        if (url) httpsUrl(name, url);
      }
      httpsOrigins('NOTIFY_URL_ORIGINS', String(environment.NOTIFY_URL_ORIGINS ?? ''));
    } catch (error) {
      if (error instanceof ConfigError) throw new this.serverless.classes.Error(error.message);
      throw error;
    }
  }

  checkOperations() {
    const { provider, custom } = this.serverless.service;
    const days = Number(provider.logRetentionInDays);
    if (!LOG_RETENTION_DAYS.includes(days)) {
      throw new this.serverless.classes.Error(
        `LOG_RETENTION_DAYS (logRetentionInDays) is "${provider.logRetentionInDays}": it must be one of ` +
          `CloudWatch Logs' periods, ${LOG_RETENTION_DAYS.join(', ')} days.`,
      );
    }
    provider.logRetentionInDays = days;
    const topicArn = String(custom?.alarms?.topicArn ?? '').trim();
    if (topicArn && !SNS_TOPIC_ARN.test(topicArn)) {
      throw new this.serverless.classes.Error(
        `ALARM_TOPIC_ARN is "${topicArn}", not an SNS topic's ARN (arn:aws:sns:<region>:<account>:<name>).`,
      );
    }
  }
}

module.exports = DeployGuardPlugin;
