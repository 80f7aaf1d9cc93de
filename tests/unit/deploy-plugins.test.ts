import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { errorResponse } from '../../lib/envelope/error-response.ts';
import { PayloadTooLargeError, RateLimitedError, UnauthorizedError } from '../../lib/envelope/errors.ts';
import { MALFORMED } from '../../lib/http/auth/middleware.ts';
import { TOKEN_INVALID } from '../../lib/http/auth/verify.ts';
import { MAX_BODY_BYTES } from '../../lib/http/request-guard.ts';

/**
 * The deploy plugins' refusals, called through their hooks as osls calls them, on a stand-in for
 * osls's `serverless` object holding only what they read. tests/e2e/package-production.test.ts
 * runs osls itself: a package refused, a local deploy refused, a template with VPC and CORS.
 */
const require = createRequire(import.meta.url);
const DeployGuardPlugin = require('../../plugins/deploy-guard.cjs');
const CorsPlugin = require('../../plugins/cors.cjs');
const VpcPlugin = require('../../plugins/vpc.cjs');

class ServerlessError extends Error {}

interface Stand {
  stage?: string;
  commands?: string[];
  environment?: Record<string, string>;
  /** As serverless.yml resolves it: a number by default, text from LOG_RETENTION_DAYS. */
  logRetentionInDays?: number | string;
  custom?: Record<string, unknown>;
  functions?: Record<string, { events: Array<{ http?: Record<string, unknown> }> }>;
}

function serverless({
  stage = 'prod',
  commands = ['package'],
  environment = {},
  logRetentionInDays = 365,
  custom = {},
  functions = {},
}: Stand) {
  return {
    classes: { Error: ServerlessError },
    processedInput: { commands },
    getProvider: () => ({ getStage: () => stage }),
    service: {
      service: 'payhere-payments-api',
      custom,
      provider: {
        environment,
        logRetentionInDays,
        compiledCloudFormationTemplate: { Resources: {} as Record<string, unknown> },
      } as Record<string, any>,
      getAllFunctions: () => Object.keys(functions),
      getFunction: (name: string) => functions[name],
    },
  };
}

/** What a hook throws (or undefined); hooks may be async. */
async function refusal(
  plugin: { hooks: Record<string, () => unknown> },
  hook: string,
): Promise<string | undefined> {
  try {
    await plugin.hooks[hook]!();
  } catch (error) {
    expect(error).toBeInstanceOf(ServerlessError);
    return (error as Error).message;
  }
  return undefined;
}

const LIVE = { GATEWAY_BASE_URL: 'https://www.payhere.lk' };

/**
 * What osls compiles `routes` ("POST /gateway/notify") into, as the plugins read it: a resource per
 * path segment under the API's root, a method per route, a deployment of the stage `prod`.
 */
function apiTemplate(routes: string[]): Record<string, any> {
  const resources: Record<string, any> = {
    ApiGatewayDeployment1: {
      Type: 'AWS::ApiGateway::Deployment',
      Properties: { RestApiId: { Ref: 'ApiGatewayRestApi' }, StageName: 'prod' },
    },
  };
  const root = { 'Fn::GetAtt': ['ApiGatewayRestApi', 'RootResourceId'] };
  // osls's logical ids: each segment capitalized, a path parameter `{id}` as `IdVar`.
  const logical = (text: string) => {
    const word = text.replace(/^\{(.*)\}$/, '$1Var').replace(/[^A-Za-z0-9]/g, '');
    return `${word[0]!.toUpperCase()}${word.slice(1)}`;
  };
  for (const route of routes) {
    const [method, path] = route.split(' ') as [string, string];
    let parent: unknown = root;
    let id = 'ApiGatewayResource';
    for (const part of path.split('/').slice(1)) {
      id += logical(part);
      resources[id] ??= {
        Type: 'AWS::ApiGateway::Resource',
        Properties: { ParentId: parent, PathPart: part, RestApiId: { Ref: 'ApiGatewayRestApi' } },
      };
      parent = { Ref: id };
    }
    resources[`ApiGatewayMethod${id.slice('ApiGatewayResource'.length)}${logical(method.toLowerCase())}`] = {
      Type: 'AWS::ApiGateway::Method',
      Properties: {
        HttpMethod: method,
        RequestParameters: {},
        ResourceId: parent,
        RestApiId: { Ref: 'ApiGatewayRestApi' },
      },
    };
  }
  return resources;
}

/** A stand-in whose compiled template holds `routes`. */
function withRoutes(routes: string[], custom: Record<string, unknown>) {
  const stand = serverless({ custom });
  stand.service.provider.compiledCloudFormationTemplate.Resources = apiTemplate(routes);
  return stand;
}

const PACKAGED = 'after:aws:package:finalize:mergeCustomProviderResources';
const CHARGE = 'POST /gateway/api/payments/charge';
const NOTIFY = 'POST /gateway/notify';
const SUBSCRIPTION_PAYMENTS = 'GET /gateway/api/subscriptions/{id}/payments';

describe('plugins/deploy-guard.cjs', () => {
  it.each([[['deploy']], [['deploy', 'function']]])('refuses `%s` of the stage local', async (commands) => {
    const guard = new DeployGuardPlugin(serverless({ stage: 'local', commands }));

    expect(await refusal(guard, 'initialize')).toMatch(
      /^The stage "local" is for npm start and the tests only/,
    );
  });

  it.each([
    ['packaging the stage local', 'local', ['package']],
    ['running it offline', 'local', ['offline', 'start']],
    ['deploying another stage', 'prod', ['deploy']],
  ])('allows %s', async (_, stage, commands) => {
    expect(
      await refusal(new DeployGuardPlugin(serverless({ stage, commands })), 'initialize'),
    ).toBeUndefined();
  });

  it.each(['before:package:initialize', 'before:deploy:function:initialize'])(
    'refuses a deployed stage without GATEWAY_BASE_URL (%s)',
    async (hook) => {
      const guard = new DeployGuardPlugin(
        serverless({ stage: 'prod', environment: { GATEWAY_BASE_URL: ' ' } }),
      );

      expect(await refusal(guard, hook)).toMatch(
        /^GATEWAY_BASE_URL is not set: the stage "prod" must name its gateway/,
      );
    },
  );

  it.each([
    ['the gateway over http', { GATEWAY_BASE_URL: 'http://www.payhere.lk' }, 'GATEWAY_BASE_URL'],
    ['a gateway that is not a URL', { GATEWAY_BASE_URL: 'www.payhere.lk' }, 'GATEWAY_BASE_URL'],
    [
      'the token keys over http',
      { ...LIVE, AUTH_JWKS_URL: 'http://issuer.example.com/jwks' },
      'AUTH_JWKS_URL',
    ],
    [
      'notifications to an http base URL',
      { ...LIVE, PUBLIC_BASE_URL: 'http://pay.example.com' },
      'PUBLIC_BASE_URL',
    ],
    [
      'a notify_url origin over http',
      { ...LIVE, NOTIFY_URL_ORIGINS: 'http://hooks.example.com' },
      'NOTIFY_URL_ORIGINS',
    ],
  ])('refuses %s, naming the variable', async (_, environment, name) => {
    const guard = new DeployGuardPlugin(serverless({ environment }));

    expect(await refusal(guard, 'before:package:initialize')).toBe(
      `Invalid configuration: ${name} must be an absolute https URL (http only on loopback).`,
    );
  });

  it.each([
    [
      'the live gateway and an https JWKS',
      'prod',
      { ...LIVE, AUTH_JWKS_URL: 'https://issuer.example.com/jwks' },
    ],
    ['an inline JWKS', 'prod', { ...LIVE, AUTH_JWKS_URL: '' }],
    ["the local stage's sandbox default", 'local', { GATEWAY_BASE_URL: 'https://sandbox.payhere.lk' }],
    ['a local gateway on loopback', 'local', { GATEWAY_BASE_URL: 'http://127.0.0.1:4010' }],
  ])('accepts %s', async (_, stage, environment) => {
    const guard = new DeployGuardPlugin(serverless({ stage, environment }));

    expect(await refusal(guard, 'before:package:initialize')).toBeUndefined();
  });

  it('refuses a log retention CloudWatch Logs does not offer, naming the variable and the choices', async () => {
    const guard = new DeployGuardPlugin(serverless({ environment: LIVE, logRetentionInDays: '42' }));

    expect(await refusal(guard, 'before:package:initialize')).toMatch(
      /^LOG_RETENTION_DAYS \(logRetentionInDays\) is "42": it must be one of CloudWatch Logs' periods, 1, 3, .*, 3653 days\.$/,
    );
  });

  it('takes LOG_RETENTION_DAYS as text and gives CloudFormation a number', async () => {
    const stand = serverless({ environment: LIVE, logRetentionInDays: '731' });

    expect(await refusal(new DeployGuardPlugin(stand), 'before:package:initialize')).toBeUndefined();
    expect(stand.service.provider.logRetentionInDays).toBe(731);
  });

  it.each([
    ['a topic name', 'payments-alarms'],
    ['a queue', 'arn:aws:sqs:ap-south-1:123456789012:payments-alarms'],
  ])("refuses as the alarms' topic %s", async (_, topicArn) => {
    const guard = new DeployGuardPlugin(serverless({ environment: LIVE, custom: { alarms: { topicArn } } }));

    expect(await refusal(guard, 'before:package:initialize')).toBe(
      `ALARM_TOPIC_ARN is "${topicArn}", not an SNS topic's ARN (arn:aws:sns:<region>:<account>:<name>).`,
    );
  });

  it("accepts an SNS topic's ARN for the alarms", async () => {
    const topicArn = 'arn:aws:sns:ap-south-1:123456789012:payments-alarms';
    const guard = new DeployGuardPlugin(serverless({ environment: LIVE, custom: { alarms: { topicArn } } }));

    expect(await refusal(guard, 'before:package:initialize')).toBeUndefined();
  });
});

describe('plugins/cors.cjs', () => {
  const custom = (origins: string) => ({
    cors: { origins, headers: ['Authorization', 'Content-Type'], maxAge: 600 },
  });
  const functions = () => ({
    charge: { events: [{ http: { method: 'post', path: 'charge' } }] },
    getCheckout: { events: [{ http: { method: 'get', path: 'checkouts/{id}' } }] },
  });

  it('leaves every route without a preflight when no origin is listed', async () => {
    const stand = serverless({ custom: custom(''), functions: functions() });

    await new CorsPlugin(stand).hooks.initialize();

    for (const name of stand.service.getAllFunctions()) {
      expect(stand.service.getFunction(name)!.events[0]!.http!.cors).toBeUndefined();
    }
  });

  it('gives every route a preflight for exactly the listed origins, without credentials', async () => {
    const stand = serverless({
      custom: custom('https://App.example.com/, http://localhost:5173'),
      functions: functions(),
    });

    await new CorsPlugin(stand).hooks.initialize();

    for (const name of stand.service.getAllFunctions()) {
      expect(stand.service.getFunction(name)!.events[0]!.http!.cors).toEqual({
        origins: ['https://app.example.com', 'http://localhost:5173'],
        headers: ['Authorization', 'Content-Type'],
        maxAge: 600,
        allowCredentials: false,
        cacheControl: 'no-store',
      });
    }
  });

  it.each([
    ['plain http beyond loopback', 'http://app.example.com', 'must be an absolute https URL'],
    ['a wildcard', 'https://*.example.com', 'must list origins only'],
  ])('refuses an origin over %s, naming CORS_ORIGINS', async (_, origins, problem) => {
    const plugin = new CorsPlugin(serverless({ custom: custom(origins), functions: functions() }));

    expect(await refusal(plugin, 'initialize')).toMatch(
      new RegExp(`^Invalid configuration: CORS_ORIGINS ${problem}`),
    );
  });
});

describe('plugins/vpc.cjs', () => {
  const vpc = (settings: Record<string, string>) => ({
    vpc: { subnetIds: '', securityGroupIds: '', vpcId: '', routeTableIds: '', ...settings },
  });
  const NETWORK = { subnetIds: 'subnet-0a1b2c3d, subnet-4e5f6a7b', securityGroupIds: 'sg-0123abcd' };

  it('changes nothing without subnets: no VPC, no endpoint', async () => {
    const stand = serverless({ custom: vpc({}) });
    const plugin = new VpcPlugin(stand);

    await plugin.hooks['before:package:initialize']();
    await plugin.hooks['after:aws:package:finalize:mergeCustomProviderResources']();

    expect(stand.service.provider.vpc).toBeUndefined();
    expect(stand.service.provider.compiledCloudFormationTemplate.Resources).toEqual({});
  });

  it('places the functions in the subnets and security groups', async () => {
    const stand = serverless({ custom: vpc(NETWORK) });

    await new VpcPlugin(stand).hooks['before:package:initialize']();

    expect(stand.service.provider.vpc).toEqual({
      subnetIds: ['subnet-0a1b2c3d', 'subnet-4e5f6a7b'],
      securityGroupIds: ['sg-0123abcd'],
    });
  });

  it.each([
    [
      'subnets without security groups',
      { subnetIds: NETWORK.subnetIds },
      /^VPC_SUBNET_IDS and VPC_SECURITY_GROUP_IDS go together/,
    ],
    [
      'security groups without subnets',
      { securityGroupIds: 'sg-0123abcd' },
      /^VPC_SUBNET_IDS and VPC_SECURITY_GROUP_IDS go together/,
    ],
    [
      'route tables without the VPC',
      { ...NETWORK, routeTableIds: 'rtb-0123abcd' },
      /^VPC_ID and VPC_ROUTE_TABLE_IDS go together/,
    ],
    [
      'the VPC without route tables',
      { ...NETWORK, vpcId: 'vpc-0123abcd' },
      /^VPC_ID and VPC_ROUTE_TABLE_IDS go together/,
    ],
    [
      'an endpoint without functions in the VPC',
      { vpcId: 'vpc-0123abcd', routeTableIds: 'rtb-0123abcd' },
      /^VPC_ID and VPC_ROUTE_TABLE_IDS serve functions in a VPC/,
    ],
    [
      'two VPCs',
      { ...NETWORK, vpcId: 'vpc-0123abcd,vpc-4567ef01', routeTableIds: 'rtb-0123abcd' },
      /^VPC_ID names one VPC/,
    ],
    [
      'a security group among the subnets',
      { ...NETWORK, subnetIds: 'subnet-0a1b2c3d,sg-0123abcd' },
      /^VPC_SUBNET_IDS \(custom\.vpc\.subnetIds\) holds "sg-0123abcd", not an id of its kind\.$/,
    ],
    [
      'a subnet name instead of its id',
      { ...NETWORK, subnetIds: 'private-a' },
      /^VPC_SUBNET_IDS .* holds "private-a"/,
    ],
    [
      'a route table id with a typo',
      { ...NETWORK, vpcId: 'vpc-0123abcd', routeTableIds: 'rt-0123abcd' },
      /^VPC_ROUTE_TABLE_IDS/,
    ],
  ])('refuses %s', async (_, settings, message) => {
    const plugin = new VpcPlugin(serverless({ custom: vpc(settings) }));

    expect(await refusal(plugin, 'before:package:initialize')).toMatch(message);
  });
});

describe('plugins/api-stage.cjs', () => {
  const ApiStagePlugin = require('../../plugins/api-stage.cjs');
  const HOOK = PACKAGED;
  const withDeployment = (custom: Record<string, unknown>) =>
    withRoutes([CHARGE, NOTIFY, SUBSCRIPTION_PAYMENTS], custom);
  const throttle = { rateLimit: 10, burstLimit: 20 };

  it('throttles groups of routes apart, their paths encoded as API Gateway wants', async () => {
    const stand = withDeployment({
      apiStage: {
        throttle,
        readRoutes: {
          rateLimit: 2,
          burstLimit: 15,
          routes: ['GET /gateway/api/subscriptions/{id}/payments'],
        },
      },
    });

    await new ApiStagePlugin(stand).hooks[HOOK]();

    const stage = stand.service.provider.compiledCloudFormationTemplate.Resources.ApiGatewayStage as any;
    expect(stage.Properties.MethodSettings).toEqual([
      { ResourcePath: '/*', HttpMethod: '*', ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 },
      {
        ResourcePath: '/~1gateway~1api~1subscriptions~1{id}~1payments',
        HttpMethod: 'GET',
        ThrottlingRateLimit: 2,
        ThrottlingBurstLimit: 15,
      },
    ]);
  });

  it("gives PayHere's notifications limits of their own, apart from the stage's and the reads'", async () => {
    const stand = withDeployment({
      apiStage: {
        throttle,
        readRoutes: { rateLimit: 2, burstLimit: 15, routes: [SUBSCRIPTION_PAYMENTS] },
        notifyRoutes: { rateLimit: 20, burstLimit: 100, routes: [NOTIFY] },
      },
    });

    await new ApiStagePlugin(stand).hooks[HOOK]();

    const stage = stand.service.provider.compiledCloudFormationTemplate.Resources.ApiGatewayStage as any;
    expect(stage.Properties.MethodSettings.at(-1)).toEqual({
      ResourcePath: '/~1gateway~1notify',
      HttpMethod: 'POST',
      ThrottlingRateLimit: 20,
      ThrottlingBurstLimit: 100,
    });
    expect(stage.Properties.MethodSettings).toHaveLength(3);
  });

  it('logs every request with its source address, in a log group kept as long as the functions’ logs', async () => {
    const stand = withDeployment({ apiStage: { throttle } });
    stand.service.provider.logRetentionInDays = 731;

    await new ApiStagePlugin(stand).hooks[HOOK]();

    const resources = stand.service.provider.compiledCloudFormationTemplate.Resources as any;
    expect(resources.ApiGatewayAccessLogGroup).toEqual({
      Type: 'AWS::Logs::LogGroup',
      Properties: { LogGroupName: '/aws/api-gateway/payhere-payments-api-prod-access', RetentionInDays: 731 },
    });
    const { AccessLogSetting } = resources.ApiGatewayStage.Properties;
    expect(AccessLogSetting.DestinationArn).toEqual({
      'Fn::Sub': `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:\${ApiGatewayAccessLogGroup}`,
    });
    expect(JSON.parse(AccessLogSetting.Format)).toMatchObject({
      requestId: '$context.requestId',
      sourceIp: '$context.identity.sourceIp',
      status: '$context.status',
      responseType: '$context.error.responseType',
      waf: '$context.wafResponseCode',
    });
  });

  it.each([
    [{ rateLimit: 0, burstLimit: 15, routes: [] }, 'custom.apiStage.readRoutes needs rateLimit'],
    [{ rateLimit: 2, burstLimit: 15, routes: ['/gateway/api/subscriptions'] }, 'must look like'],
    [
      { rateLimit: 2, burstLimit: 15, routes: ['GET /gateway/api/subscription'] },
      'custom.apiStage.readRoutes: "GET /gateway/api/subscription" is no route of this service.',
    ],
  ])('refuses read routes %j', async (readRoutes, message) => {
    const stand = withDeployment({ apiStage: { throttle, readRoutes } });

    expect(await refusal(new ApiStagePlugin(stand), HOOK)).toContain(message);
  });

  it('refuses a route throttled by two groups', async () => {
    const stand = withDeployment({
      apiStage: {
        throttle,
        readRoutes: { rateLimit: 2, burstLimit: 15, routes: [NOTIFY] },
        notifyRoutes: { rateLimit: 20, burstLimit: 100, routes: [NOTIFY] },
      },
    });

    expect(await refusal(new ApiStagePlugin(stand), HOOK)).toBe(
      'custom.apiStage.notifyRoutes: "POST /gateway/notify" is throttled by another group too.',
    );
  });
});

describe('plugins/bearer-gate.cjs', () => {
  const BearerGatePlugin = require('../../plugins/bearer-gate.cjs');
  const ROUTES = [CHARGE, SUBSCRIPTION_PAYMENTS, NOTIFY];
  const methods = (stand: ReturnType<typeof serverless>) =>
    Object.fromEntries(
      Object.entries(stand.service.provider.compiledCloudFormationTemplate.Resources as Record<string, any>)
        .filter(([, r]) => r.Type === 'AWS::ApiGateway::Method')
        .map(([id, r]) => [id, r.Properties]),
    );

  it('requires the Authorization header on every route but the open ones, with a validator of parameters only', async () => {
    const stand = withRoutes(ROUTES, { bearerGate: { open: [NOTIFY] } });

    await new BearerGatePlugin(stand).hooks[PACKAGED]();

    const gated = { 'method.request.header.Authorization': true };
    const validator = { Ref: 'ApiGatewayBearerHeaderValidator' };
    expect(methods(stand)).toMatchObject({
      ApiGatewayMethodGatewayApiPaymentsChargePost: {
        RequestParameters: gated,
        RequestValidatorId: validator,
      },
      ApiGatewayMethodGatewayApiSubscriptionsIdVarPaymentsGet: {
        RequestParameters: gated,
        RequestValidatorId: validator,
      },
    });
    expect(methods(stand).ApiGatewayMethodGatewayNotifyPost).toEqual(
      expect.objectContaining({ RequestParameters: {} }),
    );
    expect(methods(stand).ApiGatewayMethodGatewayNotifyPost.RequestValidatorId).toBeUndefined();
    expect(stand.service.provider.compiledCloudFormationTemplate.Resources).toMatchObject({
      ApiGatewayBearerHeaderValidator: {
        Type: 'AWS::ApiGateway::RequestValidator',
        Properties: {
          RestApiId: { Ref: 'ApiGatewayRestApi' },
          ValidateRequestParameters: true,
          ValidateRequestBody: false,
        },
      },
    });
  });

  it('gates every route, PayHere’s too, when none is open', async () => {
    const stand = withRoutes(ROUTES, {});

    await new BearerGatePlugin(stand).hooks[PACKAGED]();

    for (const method of Object.values(methods(stand))) {
      expect(method.RequestValidatorId).toEqual({ Ref: 'ApiGatewayBearerHeaderValidator' });
    }
  });

  it('refuses an open route the service does not have, rather than gate the one it meant', async () => {
    const stand = withRoutes(ROUTES, { bearerGate: { open: ['POST /gateway/notfy'] } });

    expect(await refusal(new BearerGatePlugin(stand), PACKAGED)).toBe(
      'custom.bearerGate.open: "POST /gateway/notfy" is no route of this service.',
    );
  });

  it('refuses to replace a request validator a route already has', async () => {
    const stand = withRoutes(ROUTES, { bearerGate: { open: [NOTIFY] } });
    methods(stand).ApiGatewayMethodGatewayApiPaymentsChargePost.RequestValidatorId = { Ref: 'Other' };

    expect(await refusal(new BearerGatePlugin(stand), PACKAGED)).toMatch(
      /ApiGatewayMethodGatewayApiPaymentsChargePost already has a request validator/,
    );
  });
});

describe('plugins/waf.cjs', () => {
  const WafPlugin = require('../../plugins/waf.cjs');
  const ApiStagePlugin = require('../../plugins/api-stage.cjs');
  const custom = (waf: Record<string, unknown>) => ({
    apiStage: { throttle: { rateLimit: 10, burstLimit: 20 } },
    waf: {
      enabled: 'false',
      rateLimit: 300,
      issuer: 'https://issuer.example.com/',
      commonRuleSetSkips: [NOTIFY],
      bearerSkips: [NOTIFY],
      ...waf,
    },
  });
  /** Both plugins' finalize hooks, in serverless.yml's order: the stage first, then the web ACL. */
  async function packaged(waf: Record<string, unknown>) {
    const stand = withRoutes([CHARGE, NOTIFY], custom(waf));
    await new ApiStagePlugin(stand).hooks[PACKAGED]();
    const plugin = new WafPlugin(stand);
    await plugin.hooks['before:package:initialize']();
    await plugin.hooks[PACKAGED]();
    return stand.service.provider.compiledCloudFormationTemplate.Resources as Record<string, any>;
  }

  it('declares nothing unless turned on', async () => {
    const resources = await packaged({});

    expect(Object.values(resources).filter((r) => r.Type.startsWith('AWS::WAFv2::'))).toEqual([]);
  });

  it('puts a web ACL on the stage: per-address rate, bearer shape and issuer, body size, then AWS’s common rule set', async () => {
    const resources = await packaged({ enabled: 'true', rateLimit: '540' });

    expect(resources.WebAclAssociation).toEqual({
      Type: 'AWS::WAFv2::WebACLAssociation',
      DependsOn: ['ApiGatewayStage'],
      Properties: {
        ResourceArn: {
          'Fn::Sub': `arn:\${AWS::Partition}:apigateway:\${AWS::Region}::/restapis/\${ApiGatewayRestApi}/stages/prod`,
        },
        WebACLArn: { 'Fn::GetAtt': ['WebAcl', 'Arn'] },
      },
    });
    const acl = resources.WebAcl.Properties;
    expect(acl).toMatchObject({
      Name: 'payhere-payments-api-prod',
      Scope: 'REGIONAL',
      DefaultAction: { Allow: {} },
    });
    expect(acl.Rules.map((rule: any) => [rule.Priority, rule.Name])).toEqual([
      [0, 'per-address-rate'],
      [1, 'bearer-shape'],
      [2, 'bearer-issuer'],
      [3, 'body-size'],
      [4, 'aws-common-rule-set'],
    ]);
    expect(acl.Rules[0].Statement).toEqual({
      RateBasedStatement: { Limit: 540, EvaluationWindowSec: 60, AggregateKeyType: 'IP' },
    });
    expect(acl.Rules[3].Statement.SizeConstraintStatement).toMatchObject({
      FieldToMatch: { Body: { OversizeHandling: 'MATCH' } },
      ComparisonOperator: 'GT',
      Size: MAX_BODY_BYTES,
    });
  });

  it('answers what it blocks as a function would: the envelope, its status and headers', async () => {
    const acl = (await packaged({ enabled: 'true' })).WebAcl.Properties;
    /** What AWS WAF answers for a rule: its status, body and headers, Content-Type from the body's type. */
    const answerOf = (rule: any) => {
      const response = rule.Action.Block.CustomResponse;
      const body = acl.CustomResponseBodies[response.CustomResponseBodyKey];
      expect(body.ContentType).toBe('APPLICATION_JSON');
      // AWS WAF refuses a custom response header named Content-Type.
      expect(response.ResponseHeaders.map((h: any) => h.Name.toLowerCase())).not.toContain('content-type');
      return {
        statusCode: response.ResponseCode,
        headers: {
          'Content-Type': 'application/json',
          ...Object.fromEntries(response.ResponseHeaders.map((h: any) => [h.Name, h.Value])),
        },
        body: body.Content,
      };
    };

    expect(answerOf(acl.Rules[3])).toEqual(errorResponse(new PayloadTooLargeError(MAX_BODY_BYTES)));
    expect(answerOf(acl.Rules[1])).toEqual(errorResponse(new UnauthorizedError(MALFORMED)));
    expect(answerOf(acl.Rules[0])).toEqual(
      errorResponse(
        new RateLimitedError('Too many requests from this address: wait a minute, then retry.', 60),
      ),
    );
  });

  it('asks no bearer token of a CORS preflight (OPTIONS), nor of PayHere’s notifications', async () => {
    const [, shape, issuer] = (await packaged({ enabled: 'true' })).WebAcl.Properties.Rules;

    for (const rule of [shape, issuer]) {
      const [notify, preflight, check] = rule.Statement.AndStatement.Statements;
      expect(notify.NotStatement.Statement.ByteMatchStatement.SearchString).toBe('/gateway/notify');
      expect(preflight).toEqual({
        NotStatement: {
          Statement: {
            ByteMatchStatement: {
              FieldToMatch: { Method: {} },
              PositionalConstraint: 'EXACTLY',
              SearchString: 'OPTIONS',
              TextTransformations: [{ Priority: 0, Type: 'NONE' }],
            },
          },
        },
      });
      expect(check.NotStatement).toBeDefined();
    }
  });

  it("skips PayHere's signed notifications in the common rule set, which counts only unless told to block", async () => {
    const [, , , , common] = (await packaged({ enabled: 'true' })).WebAcl.Properties.Rules;
    const [, , , , blocking] = (await packaged({ enabled: 'true', commonRules: 'block' })).WebAcl.Properties
      .Rules;

    expect(common.OverrideAction).toEqual({ Count: {} });
    expect(blocking.OverrideAction).toEqual({ None: {} });
    expect(common.Statement.ManagedRuleGroupStatement).toEqual({
      VendorName: 'AWS',
      Name: 'AWSManagedRulesCommonRuleSet',
      RuleActionOverrides: [{ Name: 'SizeRestrictions_BODY', ActionToUse: { Count: {} } }],
      ScopeDownStatement: {
        NotStatement: {
          Statement: {
            ByteMatchStatement: {
              FieldToMatch: { UriPath: {} },
              PositionalConstraint: 'ENDS_WITH',
              SearchString: '/gateway/notify',
              TextTransformations: [{ Priority: 0, Type: 'NONE' }],
            },
          },
        },
      },
    });
  });

  it.each([
    [
      'a switch that is not true or false',
      { enabled: 'yes' },
      /^WAF_ENABLED \(custom\.waf\.enabled\) is "yes"/,
    ],
    ['a rate below AWS WAF’s lowest, 10', { enabled: 'true', rateLimit: '5' }, /^WAF_RATE_LIMIT .* is "5"/],
    [
      'an issuer rule neither count nor block',
      { enabled: 'true', issuerRule: 'deny' },
      /^WAF_ISSUER_RULE .* is "deny"/,
    ],
    [
      'common rules neither count nor block',
      { enabled: 'true', commonRules: 'on' },
      /^WAF_COMMON_RULES .* is "on"/,
    ],
    [
      'a rate that is not a whole number',
      { enabled: 'true', rateLimit: '2.5' },
      /^WAF_RATE_LIMIT .* is "2\.5"/,
    ],
  ])('refuses %s before anything is built', async (_, waf, message) => {
    const plugin = new WafPlugin(withRoutes([CHARGE, NOTIFY], custom(waf)));

    expect(await refusal(plugin, 'before:package:initialize')).toMatch(message);
  });

  it('refuses a skipped route the service does not have', async () => {
    await expect(packaged({ enabled: 'true', commonRuleSetSkips: ['POST /gateway/notice'] })).rejects.toThrow(
      'custom.waf.commonRuleSetSkips: "POST /gateway/notice" is no route of this service.',
    );
  });

  it('refuses a per-address rate one address could fill the slowest route’s bucket with', async () => {
    await expect(packaged({ enabled: 'true', rateLimit: '600' })).rejects.toThrow(
      /^WAF_RATE_LIMIT \(custom\.waf\.rateLimit\) is 600 a minute, 10 a second: it must stay below every route's throttle, the lowest of which is 10 a second/,
    );
  });

  it('refuses, on every route but PayHere’s, a bearer header the functions would not parse', async () => {
    const [, shape] = (await packaged({ enabled: 'true' })).WebAcl.Properties.Rules;
    const { Statements } = shape.Statement.AndStatement;
    const regex = new RegExp(Statements.at(-1).NotStatement.Statement.RegexMatchStatement.RegexString);

    expect(Statements[0]).toEqual({
      NotStatement: {
        Statement: {
          ByteMatchStatement: expect.objectContaining({ SearchString: '/gateway/notify' }),
        },
      },
    });
    expect(Statements.at(-1).NotStatement.Statement.RegexMatchStatement.FieldToMatch).toEqual({
      SingleHeader: { Name: 'authorization' },
    });
    for (const header of ['Bearer a.b.c', 'bearer  eyJ.eyJ.sig', ' BEARER a-_.b_-.c ']) {
      expect(regex.test(header), header).toBe(true);
    }
    for (const header of ['Bearer x', 'Bearer a.b', 'Basic a.b.c', 'Bearer a.b.c.d.e', 'Bearer a.b.c=', '']) {
      expect(regex.test(header), header).toBe(false);
    }
  });

  it('counts, or with issuerRule block refuses, a bearer token whose payload cannot hold our issuer', async () => {
    const [, , counting] = (await packaged({ enabled: 'true' })).WebAcl.Properties.Rules;
    const [, , blocking] = (await packaged({ enabled: 'true', issuerRule: 'block' })).WebAcl.Properties.Rules;

    expect(counting.Action).toEqual({ Count: {} });
    expect(blocking.Action.Block.CustomResponse.ResponseCode).toBe(
      errorResponse(new UnauthorizedError(TOKEN_INVALID)).statusCode,
    );
    const fragments = counting.Statement.AndStatement.Statements.at(
      -1,
    ).NotStatement.Statement.OrStatement.Statements.map(
      (s: any) => s.ByteMatchStatement.SearchString as string,
    );
    expect(fragments).toEqual(WafPlugin.base64urlFragments('"iss":"https://issuer.example.com/"'));
    // Wherever the claim sits in a payload, one of the three is in its base64url.
    const payload = (claims: Record<string, unknown>) =>
      Buffer.from(JSON.stringify(claims)).toString('base64url');
    for (let pad = 0; pad < 6; pad++) {
      const ours = payload({ sub: 'x'.repeat(pad), iss: 'https://issuer.example.com/', exp: 1 });
      expect(
        fragments.some((f: string) => ours.includes(f)),
        `pad ${pad}`,
      ).toBe(true);
      const theirs = payload({ sub: 'x'.repeat(pad), iss: 'https://issuer.example.com/evil', exp: 1 });
      expect(
        fragments.some((f: string) => theirs.includes(f)),
        `pad ${pad}`,
      ).toBe(false);
    }
  });

  it('has no issuer rule without an issuer', async () => {
    const rules = (await packaged({ enabled: 'true', issuer: '' })).WebAcl.Properties.Rules;

    expect(rules.map((rule: any) => rule.Name)).not.toContain('bearer-issuer');
  });
});
