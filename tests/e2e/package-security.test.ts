import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorResponse } from '../../lib/envelope/error-response.ts';
import { bearerToken } from '../../lib/http/auth/middleware.ts';
import { copyService } from '../helpers/package.ts';
import { FUNCTIONS, NOTIFY_ROUTE, ROUTES } from '../helpers/routes.ts';

/**
 * The deployable CloudFormation template (`osls package`, no AWS account): every function carries
 * its auth configuration and reads the one secret, IAM names concrete resources, API Gateway's own
 * answers render the envelope, the stage is throttled, and no credential ends up in the template.
 */
const run = promisify(execFile);
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');

const SECRET_ARN = 'arn:aws:secretsmanager:ap-south-1:123456789012:secret:payhere/test/gateway-AbCdEf';
const WEBHOOKS_SECRET_ARN =
  'arn:aws:secretsmanager:ap-south-1:123456789012:secret:payhere/test/webhooks-AbCdEf';
/** A resource as the ARN text it becomes (Fn::Sub text, or Fn::Join parts joined). */
function arnText(resource: any): string {
  if (typeof resource === 'string') return resource;
  if (resource['Fn::Sub']) return resource['Fn::Sub'];
  if (resource['Fn::Join']) {
    const [separator, parts] = resource['Fn::Join'];
    return parts.map((part: any) => (typeof part === 'string' ? part : JSON.stringify(part))).join(separator);
  }
  return JSON.stringify(resource);
}

const DEPLOY_ENV = {
  GATEWAY_BASE_URL: 'https://www.payhere.lk',
  AUTH_ISSUER: 'https://issuer.example.com/',
  AUTH_AUDIENCE: 'payhere-payments-api',
  AUTH_JWKS_URL: 'https://issuer.example.com/.well-known/jwks.json',
  GATEWAY_SECRET_ARN: SECRET_ARN,
  MERCHANT_WEBHOOKS_SECRET_ARN: WEBHOOKS_SECRET_ARN,
  // Set by mistake in the shell of whoever deploys: must not reach the template.
  GATEWAY_APP_ID: 'CANARY-APP-ID-in-deploy-env',
  GATEWAY_APP_SECRET: 'CANARY-APP-SECRET-in-deploy-env',
  GATEWAY_MERCHANT_SECRET: 'CANARY-MERCHANT-SECRET-in-deploy-env',
};

/** Off by default; tests/e2e/package-production.test.ts sets them. */
const OPTIONAL_ENV = [
  'CORS_ORIGINS',
  'VPC_SUBNET_IDS',
  'VPC_SECURITY_GROUP_IDS',
  'VPC_ID',
  'VPC_ROUTE_TABLE_IDS',
  'WAF_ENABLED',
  'WAF_RATE_LIMIT',
];

type Template = { Resources: Record<string, { Type: string; Properties: any; DependsOn?: string[] }> };
let out: string;
let template: Template;
let defaultTemplate: Template;

/**
 * Package a copy of the service with exactly `env` on top of this process's environment minus the
 * deploy variables. A copy, because serverless-esbuild always stages artifacts in the service's
 * own .serverless/, which two packages running at once (this file and package.test.ts) would share.
 */
async function packageWith(env: Record<string, string>, folder: string): Promise<Template> {
  const service = path.join(out, folder);
  await copyService(service);
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !(name in DEPLOY_ENV) && !OPTIONAL_ENV.includes(name)),
  );
  const dir = path.join(service, 'artifacts');
  await run(process.execPath, [slsBin, 'package', '--stage', 'test', '--package', dir], {
    cwd: service,
    env: { ...inherited, ...env, ESBUILD_WORK_FOLDER: '.esbuild' },
  });
  return JSON.parse(await readFile(path.join(dir, 'cloudformation-template-update-stack.json'), 'utf8'));
}

beforeAll(async () => {
  out = await mkdtemp(path.join(tmpdir(), 'payhere-package-security-'));
  [template, defaultTemplate] = await Promise.all([
    packageWith(DEPLOY_ENV, 'security-deploy'),
    packageWith({ GATEWAY_BASE_URL: DEPLOY_ENV.GATEWAY_BASE_URL }, 'security-default'),
  ]);
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

const resourcesOf = (t: Template, type: string) =>
  Object.entries(t.Resources).filter(([, resource]) => resource.Type === type);
const functions = (t: Template) => resourcesOf(t, 'AWS::Lambda::Function').map(([, fn]) => fn);

/** Every statement of every role and policy in the template. */
function statements(t: Template): any[] {
  return Object.values(t.Resources).flatMap((resource) => {
    if (resource.Type === 'AWS::IAM::Role') {
      return (resource.Properties.Policies ?? []).flatMap((policy: any) => policy.PolicyDocument.Statement);
    }
    if (resource.Type === 'AWS::IAM::Policy' || resource.Type === 'AWS::IAM::ManagedPolicy') {
      return resource.Properties.PolicyDocument.Statement;
    }
    return [];
  });
}

describe('every function', () => {
  it('has the authentication configuration', () => {
    expect(functions(template)).toHaveLength(FUNCTIONS.length);
    for (const fn of functions(template)) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        AUTH_ISSUER: DEPLOY_ENV.AUTH_ISSUER,
        AUTH_AUDIENCE: DEPLOY_ENV.AUTH_AUDIENCE,
        AUTH_JWKS_URL: DEPLOY_ENV.AUTH_JWKS_URL,
      });
    }
  });

  it('reads the gateway credentials from the secret, and from nowhere else', () => {
    for (const fn of functions(template)) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        GATEWAY_SECRET_ID: SECRET_ARN,
        GATEWAY_APP_ID: '',
        GATEWAY_APP_SECRET: '',
        GATEWAY_MERCHANT_ID: '',
        GATEWAY_MERCHANT_SECRET: '',
      });
    }
    expect(JSON.stringify(template)).not.toMatch(/CANARY/);
  });

  it('by default reads the secret named after the service and stage', () => {
    for (const fn of functions(defaultTemplate)) {
      expect(fn.Properties.Environment.Variables.GATEWAY_SECRET_ID).toBe('payhere-payments-api/test/gateway');
    }
  });

  it('that uses the gateway’s credentials may read that one secret, whichever role it runs under; the ledger-only lists may not', () => {
    // Answered from the ledger or the events alone: no PayHere call, no checkout hash, no gateway secret.
    const ledgerOnly = new Set([
      'ListOrdersLambdaFunction',
      'PaymentRefundsLambdaFunction',
      'WebhookDeliveriesLambdaFunction',
      'RedeliverEventLambdaFunction',
      'DeliverWebhooksLambdaFunction',
      'ListEventsLambdaFunction',
      'RelayEventsLambdaFunction',
    ]);
    for (const [name, fn] of resourcesOf(template, 'AWS::Lambda::Function')) {
      const id = fn.Properties.Role['Fn::GetAtt'][0] as string;
      const roleStatements = template.Resources[id]!.Properties.Policies.flatMap(
        (policy: any) => policy.PolicyDocument.Statement,
      );
      const readsGatewaySecret = roleStatements.some(
        (statement: any) =>
          [statement.Action].flat().includes('secretsmanager:GetSecretValue') &&
          [statement.Resource].flat().map(arnText).includes(SECRET_ARN),
      );
      expect(readsGatewaySecret, name).toBe(!ledgerOnly.has(name));
    }
  });

  it('is invoked by API Gateway without an authorizer: the function authenticates (docs/contract.md)', () => {
    const methods = resourcesOf(template, 'AWS::ApiGateway::Method').map(([, method]) => method.Properties);

    expect(methods.length).toBeGreaterThanOrEqual(9);
    for (const method of methods) expect(method.AuthorizationType).toBe('NONE');
  });
});

describe('IAM', () => {
  /** Where `*` is unavoidable: log streams have random names, inside this service's own log groups. */
  const OWN_LOG_GROUPS =
    /^arn:\$\{AWS::Partition\}:logs:\$\{AWS::Region\}:\$\{AWS::AccountId\}:log-group:\/aws\/lambda\/payhere-payments-api-test(-[A-Za-z]+)?[*:]*$|^arn:\{"Ref":"AWS::Partition"\}:logs:\{"Ref":"AWS::Region"\}:\{"Ref":"AWS::AccountId"\}:log-group:\/aws\/lambda\/payhere-payments-api-test[*:]*$/;

  it.each([
    ['with GATEWAY_SECRET_ARN', () => template],
    ['by default', () => defaultTemplate],
  ])('names concrete resources and actions in every statement (%s)', (_, t) => {
    const all = statements(t());

    expect(all.length).toBeGreaterThan(0);
    for (const statement of all) {
      expect(statement.Effect).toBe('Allow');
      for (const action of [statement.Action].flat()) expect(action).not.toContain('*');
      for (const resource of [statement.Resource].flat()) {
        const arn = arnText(resource);
        expect(arn).not.toBe('*');
        if (arn.includes('*')) expect(arn).toMatch(OWN_LOG_GROUPS);
      }
    }
  });

  it('lets functions read exactly the configured secrets, and nothing else in Secrets Manager', () => {
    const secretStatements = statements(template).filter((s) =>
      [s.Action].flat().some((action: string) => action.startsWith('secretsmanager:')),
    );

    expect(secretStatements.length).toBeGreaterThanOrEqual(1);
    for (const statement of secretStatements) {
      expect([statement.Action].flat()).toEqual(['secretsmanager:GetSecretValue']);
      expect([[SECRET_ARN], [WEBHOOKS_SECRET_ARN]]).toContainEqual([statement.Resource].flat().map(arnText));
    }
    // The webhook endpoints' secret: the deliverer's alone.
    const deliverer = template.Resources.DeliverWebhooksLambdaFunction!.Properties.Role['Fn::GetAtt'][0];
    const readers = Object.entries(template.Resources)
      .filter(([, resource]: [string, any]) => resource.Type === 'AWS::IAM::Role')
      .filter(([, role]: [string, any]) =>
        JSON.stringify(role.Properties.Policies).includes(WEBHOOKS_SECRET_ARN),
      )
      .map(([id]) => id);
    expect(readers).toEqual([deliverer]);
  });

  it('by default names the one secret by its name (the six ? are the suffix AWS appends)', () => {
    const resources = statements(defaultTemplate)
      .filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'))
      .flatMap((s) => [s.Resource].flat().map(arnText));

    const sub = (name: string) => `\${AWS::${name}}`;
    expect(new Set(resources)).toEqual(
      new Set([
        `arn:${sub('Partition')}:secretsmanager:${sub('Region')}:${sub('AccountId')}:secret:payhere-payments-api/test/gateway-??????`,
        `arn:${sub('Partition')}:secretsmanager:${sub('Region')}:${sub('AccountId')}:secret:payhere-payments-api/test/webhooks-??????`,
      ]),
    );
  });
});

describe("API Gateway's own answers", () => {
  /** ResponseType → [HTTP status (undefined: API Gateway's own is kept), envelope status, code]. */
  const EXPECTED: Record<string, [string | undefined, number, string]> = {
    DEFAULT_4XX: [undefined, -1, 'invalid_request'],
    DEFAULT_5XX: [undefined, -1, 'internal_error'],
    MISSING_AUTHENTICATION_TOKEN: ['404', -1, 'not_found'],
    RESOURCE_NOT_FOUND: ['404', -1, 'not_found'],
    UNAUTHORIZED: ['401', -2, 'unauthorized'],
    EXPIRED_TOKEN: ['401', -2, 'unauthorized'],
    INVALID_SIGNATURE: ['401', -2, 'unauthorized'],
    ACCESS_DENIED: ['403', -2, 'forbidden'],
    INVALID_API_KEY: ['403', -2, 'forbidden'],
    WAF_FILTERED: ['403', -2, 'forbidden'],
    BAD_REQUEST_BODY: ['400', -1, 'invalid_request'],
    // The Authorization header is the one parameter any method requires (the bearer gate, below).
    BAD_REQUEST_PARAMETERS: ['401', -2, 'unauthorized'],
    UNSUPPORTED_MEDIA_TYPE: ['415', -1, 'unsupported_media_type'],
    REQUEST_TOO_LARGE: ['413', -1, 'payload_too_large'],
    THROTTLED: ['429', -1, 'rate_limited'],
    QUOTA_EXCEEDED: ['429', -1, 'rate_limited'],
    INTEGRATION_TIMEOUT: ['504', -1, 'gateway_timeout'],
    INTEGRATION_FAILURE: ['503', -1, 'gateway_unavailable'],
  };
  const responses = (): Record<string, any> =>
    Object.fromEntries(
      resourcesOf(template, 'AWS::ApiGateway::GatewayResponse').map(([id, r]) => [
        r.Properties.ResponseType,
        { id, ...r.Properties },
      ]),
    );

  it('exist for every type that matters, once each', () => {
    expect(Object.keys(responses()).sort()).toEqual(Object.keys(EXPECTED).sort());
    expect(resourcesOf(template, 'AWS::ApiGateway::GatewayResponse')).toHaveLength(
      Object.keys(EXPECTED).length,
    );
  });

  it.each(Object.entries(EXPECTED))(
    '%s renders the envelope as JSON with its status and code, never cached or sniffed',
    (type, expected) => {
      const [statusCode, status, code] = expected;
      const response = responses()[type];

      expect(response.RestApiId).toEqual({ Ref: 'ApiGatewayRestApi' });
      expect(response.StatusCode).toBe(statusCode);
      expect(response.ResponseParameters['gatewayresponse.header.Content-Type']).toBe("'application/json'");
      expect(response.ResponseParameters['gatewayresponse.header.Cache-Control']).toBe("'no-store'");
      expect(response.ResponseParameters['gatewayresponse.header.X-Content-Type-Options']).toBe("'nosniff'");
      const envelope = JSON.parse(response.ResponseTemplates['application/json']);
      expect(Object.keys(envelope).sort()).toEqual(['data', 'msg', 'status']);
      expect(envelope.status).toBe(status);
      expect(envelope.msg).toMatch(/^[A-Z].+\.$/);
      expect(envelope.data).toEqual({ code });
      // VTL would read these: the template must be the literal envelope.
      expect(response.ResponseTemplates['application/json']).not.toMatch(/[$#]/);
    },
  );

  it.each(['UNAUTHORIZED', 'BAD_REQUEST_PARAMETERS'])('asks for a bearer token on 401 (%s)', (type) => {
    expect(responses()[type].ResponseParameters['gatewayresponse.header.WWW-Authenticate']).toBe("'Bearer'");
  });

  it('answer a request without Authorization exactly as a function does', () => {
    let refusal: unknown;
    try {
      bearerToken({ headers: {}, multiValueHeaders: {} });
    } catch (error) {
      refusal = error;
    }
    const fromFunction = errorResponse(refusal);
    const fromGateway = responses().BAD_REQUEST_PARAMETERS;

    expect(fromGateway.StatusCode).toBe(String(fromFunction.statusCode));
    expect(JSON.parse(fromGateway.ResponseTemplates['application/json'])).toEqual(
      JSON.parse(fromFunction.body as string),
    );
    for (const [header, value] of Object.entries(fromFunction.headers!)) {
      expect(fromGateway.ResponseParameters[`gatewayresponse.header.${header}`], header).toBe(`'${value}'`);
    }
  });

  it('go live with the deployment that creates them', () => {
    const [[, deployment]] = resourcesOf(template, 'AWS::ApiGateway::Deployment') as [[string, any]];

    for (const { id } of Object.values(responses())) expect(deployment.DependsOn).toContain(id);
  });
});

describe('the stage (docs/operator.md "Strangers at the edge")', () => {
  const settingsOf = (t: Template) => {
    const [[, stage]] = resourcesOf(t, 'AWS::ApiGateway::Stage') as [[string, any]];
    return stage.Properties.MethodSettings as Array<Record<string, unknown>>;
  };

  it('throttles every method, each route to what bounds it rather than to what PayHere serves', () => {
    const stages = resourcesOf(template, 'AWS::ApiGateway::Stage');
    const [deploymentId, deployment] = resourcesOf(template, 'AWS::ApiGateway::Deployment')[0]!;

    expect(stages).toHaveLength(1);
    const [, stage] = stages[0]!;
    expect(stage.Properties).toMatchObject({
      RestApiId: { Ref: 'ApiGatewayRestApi' },
      DeploymentId: { Ref: deploymentId },
      StageName: 'test',
    });
    const route = (ResourcePath: string, rate: number, burst: number, HttpMethod = 'GET') => ({
      ResourcePath,
      HttpMethod,
      ThrottlingRateLimit: rate,
      ThrottlingBurstLimit: burst,
    });
    expect(stage.Properties.MethodSettings).toEqual([
      // The money routes and createCheckout: a caller's money requests have windows of their own.
      route('/*', 10, 20, '*'),
      // Reads PayHere answers unless shared: its budget bounds what they cost it, not this.
      route('/~1gateway~1api~1payments~1{id}', 20, 40),
      route('/~1gateway~1api~1subscriptions', 20, 40),
      route('/~1gateway~1api~1subscriptions~1{id}', 20, 40),
      route('/~1gateway~1api~1subscriptions~1{id}~1payments', 20, 40),
      // getCheckout: the ledger answers it; PayHere at most once per 10 s per order.
      route('/~1gateway~1api~1checkouts~1{order_id}', 50, 100),
      // PayHere's notifications: limits of their own, not the app's.
      route('/~1gateway~1notify', 20, 100, 'POST'),
    ]);
    // The stage resource owns the stage; a Deployment naming it too would collide.
    expect(deployment!.Properties.StageName).toBeUndefined();
  });

  it('lets no single address fill any route’s bucket: AWS WAF’s per-address rate is below every one', () => {
    for (const t of [template, defaultTemplate]) {
      const [[, acl]] = resourcesOf(t, 'AWS::WAFv2::WebACL') as [[string, any]];
      const rate = acl.Properties.Rules.find((rule: any) => rule.Name === 'per-address-rate').Statement
        .RateBasedStatement;
      const perSecond = rate.Limit / rate.EvaluationWindowSec;

      expect(rate).toEqual({ Limit: 300, EvaluationWindowSec: 60, AggregateKeyType: 'IP' });
      for (const setting of settingsOf(t)) {
        expect(perSecond, String(setting.ResourcePath)).toBeLessThan(setting.ThrottlingRateLimit as number);
      }
    }
  });

  it('logs every request with its source address, in a log group kept as long as the functions’ logs', () => {
    const [[, stage]] = resourcesOf(template, 'AWS::ApiGateway::Stage') as [[string, any]];
    const group = template.Resources.ApiGatewayAccessLogGroup!;

    expect(group.Type).toBe('AWS::Logs::LogGroup');
    expect(group.Properties.RetentionInDays).toBe(365);
    expect(stage.Properties.AccessLogSetting.DestinationArn['Fn::Sub']).toMatch(
      /:log-group:\$\{ApiGatewayAccessLogGroup\}$/,
    );
    const format = JSON.parse(stage.Properties.AccessLogSetting.Format);
    expect(format).toMatchObject({
      sourceIp: '$context.identity.sourceIp',
      requestId: '$context.requestId',
      status: '$context.status',
      responseType: '$context.error.responseType',
      waf: '$context.wafResponseCode',
    });
  });
});

describe('the bearer gate (docs/operator.md "Strangers at the edge")', () => {
  const methods = () =>
    resourcesOf(template, 'AWS::ApiGateway::Method')
      .map(([, method]) => method.Properties)
      .filter((method) => method.HttpMethod !== 'OPTIONS');
  const isNotify = (method: any) =>
    method.HttpMethod === NOTIFY_ROUTE.method &&
    template.Resources[method.ResourceId.Ref]!.Properties.PathPart === 'notify';

  it('has API Gateway refuse a request without Authorization on every route but PayHere’s, before any function runs', () => {
    const gated = methods().filter((method) => !isNotify(method));

    expect(gated).toHaveLength(Object.keys(ROUTES).length);
    for (const method of gated) {
      expect(method.RequestParameters).toEqual({ 'method.request.header.Authorization': true });
      expect(method.RequestValidatorId).toEqual({ Ref: 'ApiGatewayBearerHeaderValidator' });
    }
    expect(template.Resources.ApiGatewayBearerHeaderValidator).toEqual({
      Type: 'AWS::ApiGateway::RequestValidator',
      Properties: {
        RestApiId: { Ref: 'ApiGatewayRestApi' },
        Name: 'bearer-header',
        ValidateRequestParameters: true,
        ValidateRequestBody: false,
      },
    });
  });

  it('leaves PayHere’s notifications open: their signature authenticates them', () => {
    const [notify, ...others] = methods().filter(isNotify);

    expect(others).toEqual([]);
    expect(notify!.RequestParameters).toEqual({});
    expect(notify!.RequestValidatorId).toBeUndefined();
  });

  it('is the only request validator, and the header the only required parameter: its 401 never lies', () => {
    expect(resourcesOf(template, 'AWS::ApiGateway::RequestValidator').map(([id]) => id)).toEqual([
      'ApiGatewayBearerHeaderValidator',
    ]);
    for (const method of methods()) {
      const required = Object.entries(method.RequestParameters ?? {}).filter(([, needed]) => needed === true);
      expect(required.map(([name]) => name)).toEqual(
        isNotify(method) ? [] : ['method.request.header.Authorization'],
      );
    }
  });
});

describe('AWS WAF in every deployed stage (docs/operator.md "Strangers at the edge")', () => {
  const rulesOf = (t: Template) => {
    const acls = resourcesOf(t, 'AWS::WAFv2::WebACL');
    expect(acls).toHaveLength(1);
    expect(resourcesOf(t, 'AWS::WAFv2::WebACLAssociation')).toHaveLength(1);
    return Object.fromEntries((acls[0]![1].Properties.Rules as any[]).map((rule) => [rule.Name, rule]));
  };

  it('is on by default, and blocks only what the functions would refuse anyway', () => {
    const rules = rulesOf(defaultTemplate);

    expect(Object.keys(rules)).toEqual([
      'per-address-rate',
      'bearer-shape',
      'body-size',
      'aws-common-rule-set',
    ]);
    expect(rules['per-address-rate'].Action.Block.CustomResponse.ResponseCode).toBe(429);
    expect(rules['bearer-shape'].Action.Block.CustomResponse.ResponseCode).toBe(401);
    expect(rules['body-size'].Action.Block.CustomResponse.ResponseCode).toBe(413);
    // A managed rule could refuse a legitimate body: it counts until an operator says block.
    expect(rules['aws-common-rule-set'].OverrideAction).toEqual({ Count: {} });
  });

  it('refuses, before any route’s bucket, a bearer header that is no JWS, on every route but PayHere’s', () => {
    const { Statements } = rulesOf(template)['bearer-shape'].Statement.AndStatement;
    const shape = Statements.at(-1).NotStatement.Statement.RegexMatchStatement;
    const regex = new RegExp(shape.RegexString);

    // Never on a browser's CORS preflight, which carries no Authorization header.
    expect(Statements[1].NotStatement.Statement.ByteMatchStatement).toMatchObject({
      FieldToMatch: { Method: {} },
      SearchString: 'OPTIONS',
    });
    expect(Statements[0].NotStatement.Statement.ByteMatchStatement).toMatchObject({
      FieldToMatch: { UriPath: {} },
      PositionalConstraint: 'ENDS_WITH',
      SearchString: NOTIFY_ROUTE.resource,
    });
    expect(shape.FieldToMatch).toEqual({ SingleHeader: { Name: 'authorization' } });
    // Exactly what the functions parse: whatever they accept passes, `Bearer x` does not.
    for (const header of ['Bearer x', 'Bearer a.b', 'Token a.b.c', 'Bearer a.b.c.d.e']) {
      expect(regex.test(header), header).toBe(false);
      expect(() => bearerToken({ headers: { Authorization: header }, multiValueHeaders: {} })).toThrow();
    }
    for (const header of ['Bearer eyJh.eyJp.c2ln', 'bearer  a-b.c_d.e']) {
      expect(regex.test(header), header).toBe(true);
      expect(bearerToken({ headers: { Authorization: header }, multiValueHeaders: {} })).toBeTruthy();
    }
  });

  it('counts bearer tokens whose payload cannot hold the configured issuer, until told to block them', () => {
    const rule = rulesOf(template)['bearer-issuer'];

    expect(rule.Priority).toBe(2);
    expect(rule.Action).toEqual({ Count: {} });
    const searched = rule.Statement.AndStatement.Statements.at(
      -1,
    ).NotStatement.Statement.OrStatement.Statements.map((s: any) => s.ByteMatchStatement.SearchString);
    const claim = Buffer.from(JSON.stringify({ iss: DEPLOY_ENV.AUTH_ISSUER, sub: 'alice' })).toString(
      'base64url',
    );
    expect(searched.some((fragment: string) => claim.includes(fragment))).toBe(true);
  });
});

describe('a deployed stage by default', () => {
  it('talks to the gateway it was given, never the sandbox', () => {
    for (const fn of functions(defaultTemplate)) {
      expect(fn.Properties.Environment.Variables.GATEWAY_BASE_URL).toBe('https://www.payhere.lk');
    }
    expect(JSON.stringify(defaultTemplate)).not.toContain('sandbox.payhere.lk');
  });

  it('has no CORS: no preflight, no origin for the functions', () => {
    const preflights = resourcesOf(defaultTemplate, 'AWS::ApiGateway::Method').filter(
      ([, method]) => method.Properties.HttpMethod === 'OPTIONS',
    );

    expect(preflights).toEqual([]);
    expect(JSON.stringify(defaultTemplate)).not.toMatch(/Access-Control-/);
    for (const fn of functions(defaultTemplate))
      expect(fn.Properties.Environment.Variables.CORS_ORIGINS).toBe('');
  });

  it('runs outside any VPC, with no network interface permissions', () => {
    for (const fn of functions(defaultTemplate)) expect(fn.Properties.VpcConfig).toBeUndefined();
    expect(resourcesOf(defaultTemplate, 'AWS::EC2::VPCEndpoint')).toEqual([]);
    expect(statements(defaultTemplate).flatMap((s) => [s.Action].flat())).not.toContainEqual(
      expect.stringMatching(/^ec2:/),
    );
  });
});
