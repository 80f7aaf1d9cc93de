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
 *   and the token keys must not travel in clear.
 *
 * The URL rule is lib/config/config.ts's `httpsUrl`, imported as it is (Node runs TypeScript), so
 * that a deploy and a cold start can never disagree.
 */
const LOCAL_STAGE = 'local';

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
}

module.exports = DeployGuardPlugin;
