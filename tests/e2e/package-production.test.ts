import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALARMS, actionsOf, alarmsOf } from '../helpers/alarms.ts';
import { packageCopy, slsRefusal, type Template } from '../helpers/package.ts';
import { FUNCTIONS } from '../helpers/routes.ts';

/**
 * What a production deploy can be configured with, and what it refuses (`osls package` and
 * `osls deploy`, no AWS account): the configuration that fails safe, the live network path (a VPC
 * behind a fixed egress address), CORS for browser apps and AWS WAF on the stage.
 * tests/e2e/package-security.test.ts checks the default template: no VPC, no CORS, AWS WAF counting.
 */
const DEPLOY_ENV = {
  GATEWAY_BASE_URL: 'https://www.payhere.lk',
  AUTH_ISSUER: 'https://issuer.example.com/',
  AUTH_AUDIENCE: 'payhere-payments-api',
  AUTH_JWKS_URL: 'https://issuer.example.com/.well-known/jwks.json',
};
const NETWORK_ENV = {
  VPC_SUBNET_IDS: 'subnet-0a1b2c3d4e5f60718, subnet-0b1c2d3e',
  VPC_SECURITY_GROUP_IDS: 'sg-0123abcd',
  VPC_ID: 'vpc-0123abcd',
  VPC_ROUTE_TABLE_IDS: 'rtb-0123abcd,rtb-4567ef01',
};
const CORS_ENV = { CORS_ORIGINS: 'https://app.example.com, https://admin.example.com:8443' };
const WAF_ENV = {
  WAF_ENABLED: 'true',
  WAF_RATE_LIMIT: '540',
  WAF_ISSUER_RULE: 'block',
  WAF_COMMON_RULES: 'block',
};
const OPERATIONS_ENV = {
  LOG_RETENTION_DAYS: '731',
  ALARM_TOPIC_ARN: 'arn:aws:sns:ap-south-1:123456789012:payments-alarms',
};

let scratch: string;
let template: Template;
const refusals = new Map<string, string>();

/**
 * Refusals stop osls before it builds anything: run them all at once, next to the one real package.
 * Each plugin's other refusals are checked on the plugin itself (tests/unit/deploy-plugins.test.ts).
 */
const REFUSED: Array<[string, string[], Record<string, string>, RegExp]> = [
  [
    'a deployed stage without GATEWAY_BASE_URL',
    ['package', '--stage', 'prod'],
    { ...DEPLOY_ENV, GATEWAY_BASE_URL: '' },
    /GATEWAY_BASE_URL is not set: the stage "prod" must name its gateway, https:\/\/www\.payhere\.lk .* Only --stage local falls back to the sandbox\./,
  ],
  [
    'a gateway over plain http',
    ['package', '--stage', 'prod'],
    { ...DEPLOY_ENV, GATEWAY_BASE_URL: 'http://www.payhere.lk' },
    /GATEWAY_BASE_URL must be an absolute https URL \(http only on loopback\)\./,
  ],
  [
    'a per-address rate one address could fill a route with',
    ['package', '--stage', 'prod'],
    { ...DEPLOY_ENV, WAF_RATE_LIMIT: '600' },
    /WAF_RATE_LIMIT \(custom\.waf\.rateLimit\) is 600 a minute, 10 a second: it must stay below every route's throttle/,
  ],
  [
    'a deploy of the stage local',
    ['deploy', '--stage', 'local'],
    {},
    /The stage "local" is for npm start and the tests only and is never deployed/,
  ],
];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'payhere-package-production-'));
  const artifacts = (i: number) => ['--package', path.join(scratch, `refused-${i}`)];
  const [configured, ...outputs] = await Promise.all([
    packageCopy({ ...DEPLOY_ENV, ...NETWORK_ENV, ...CORS_ENV, ...WAF_ENV, ...OPERATIONS_ENV }),
    ...REFUSED.map(([, args, env], i) =>
      slsRefusal(args[0] === 'package' ? [...args, ...artifacts(i)] : args, env),
    ),
  ]);
  template = configured;
  REFUSED.forEach(([name], i) => {
    refusals.set(name, outputs[i]!);
  });
}, 180_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('configuration that fails safe', () => {
  it.each(REFUSED.map(([name, , , message]) => [name, message] as const))(
    'refuses %s, saying why',
    (name, message) => {
      expect(refusals.get(name)).toMatch(message);
    },
  );
});

const resourcesOf = (type: string) =>
  Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
const functions = () => resourcesOf('AWS::Lambda::Function').map(([, fn]) => fn);

describe('the live network path, given subnets, security groups, the VPC and its route tables', () => {
  it('runs every function in those subnets and security groups', () => {
    expect(functions()).toHaveLength(FUNCTIONS.length);
    for (const fn of functions()) {
      expect(fn.Properties.VpcConfig).toEqual({
        SubnetIds: ['subnet-0a1b2c3d4e5f60718', 'subnet-0b1c2d3e'],
        SecurityGroupIds: ['sg-0123abcd'],
      });
    }
  });

  it("lets every function's own role manage its network interfaces, and nothing more", () => {
    for (const fn of functions()) {
      const roleId = fn.Properties.Role['Fn::GetAtt'][0] as string;
      const statements = template.Resources[roleId]!.Properties.Policies.flatMap(
        (policy: any) => policy.PolicyDocument.Statement,
      );
      const ec2 = statements.filter((s: any) => [s.Action].flat().some((a: string) => a.startsWith('ec2:')));

      expect(ec2).toEqual([
        {
          Effect: 'Allow',
          Action: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
          Resource: ['*'],
        },
        {
          Effect: 'Allow',
          Action: [
            'ec2:CreateNetworkInterface',
            'ec2:DeleteNetworkInterface',
            'ec2:AssignPrivateIpAddresses',
            'ec2:UnassignPrivateIpAddresses',
          ],
          Resource: [{ 'Fn::Sub': `arn:\${AWS::Partition}:ec2:\${AWS::Region}:\${AWS::AccountId}:*/*` }],
        },
      ]);
      // Inline in the role: Lambda checks them when it creates the function in the VPC.
      expect(template.Resources[roleId]!.Type).toBe('AWS::IAM::Role');
    }
    // Not the managed policy, which would let every function write every log group in the account.
    expect(JSON.stringify(template)).not.toContain('AWSLambdaVPCAccessExecutionRole');
  });

  it('sends DynamoDB traffic through a gateway endpoint on those route tables', () => {
    const endpoints = resourcesOf('AWS::EC2::VPCEndpoint');

    expect(endpoints).toHaveLength(1);
    expect(endpoints[0]![1].Properties).toEqual({
      VpcId: 'vpc-0123abcd',
      VpcEndpointType: 'Gateway',
      ServiceName: { 'Fn::Sub': `com.amazonaws.\${AWS::Region}.dynamodb` },
      RouteTableIds: ['rtb-0123abcd', 'rtb-4567ef01'],
    });
  });
});

describe('CORS, given CORS_ORIGINS', () => {
  const preflights = () =>
    resourcesOf('AWS::ApiGateway::Method').filter(([, method]) => method.Properties.HttpMethod === 'OPTIONS');

  it('answers the preflight on every resource that has a route', () => {
    const routed = new Set(
      resourcesOf('AWS::ApiGateway::Method')
        .filter(([, method]) => method.Properties.HttpMethod !== 'OPTIONS')
        .map(([, method]) => JSON.stringify(method.Properties.ResourceId)),
    );

    expect(new Set(preflights().map(([, method]) => JSON.stringify(method.Properties.ResourceId)))).toEqual(
      routed,
    );
  });

  it.each([
    'Access-Control-Allow-Headers',
    'Access-Control-Max-Age',
    'Cache-Control',
    'X-Content-Type-Options',
  ])('sets %s on every preflight', (header) => {
    const expected: Record<string, string> = {
      'Access-Control-Allow-Headers': "'Authorization,Content-Type,Idempotency-Key,On-Behalf-Of'",
      'Access-Control-Max-Age': "'600'",
      'Cache-Control': "'no-store'",
      'X-Content-Type-Options': "'nosniff'",
    };
    for (const [, method] of preflights()) {
      const [response] = method.Properties.Integration.IntegrationResponses;
      expect(response.ResponseParameters[`method.response.header.${header}`]).toBe(expected[header]);
      expect(
        method.Properties.MethodResponses[0].ResponseParameters[`method.response.header.${header}`],
      ).toBe(true);
    }
  });

  it('allows exactly the listed origins, without credentials', () => {
    for (const [, method] of preflights()) {
      const [response] = method.Properties.Integration.IntegrationResponses;
      // API Gateway echoes Origin only when it matches one of these, whole (Java's String.matches).
      const matched = [
        ...response.ResponseTemplates['application/json'].matchAll(/\$origin\.matches\("([^"]+)"\)/g),
      ].map((match) => match[1]);
      expect(matched).toEqual(['https://app[.]example[.]com', 'https://admin[.]example[.]com:8443']);
      expect(response.ResponseParameters['method.response.header.Access-Control-Allow-Origin']).toBe(
        "'https://app.example.com'",
      );
      expect(
        response.ResponseParameters['method.response.header.Access-Control-Allow-Credentials'],
      ).toBeUndefined();
    }
  });

  it('gives every function the same origins for its own answers', () => {
    for (const fn of functions()) {
      expect(fn.Properties.Environment.Variables.CORS_ORIGINS).toBe(CORS_ENV.CORS_ORIGINS);
    }
  });
});

describe('AWS WAF, given its settings (docs/operator.md "Strangers at the edge")', () => {
  it("guards the API's one stage with one web ACL", () => {
    const [[stageId, stage]] = resourcesOf('AWS::ApiGateway::Stage') as [[string, any]];
    const acls = resourcesOf('AWS::WAFv2::WebACL');
    const associations = resourcesOf('AWS::WAFv2::WebACLAssociation');

    expect(acls).toHaveLength(1);
    expect(associations).toHaveLength(1);
    const [[aclId, acl]] = acls as [[string, any]];
    const [[, association]] = associations as [[string, any]];
    expect(acl.Properties).toMatchObject({ Scope: 'REGIONAL', DefaultAction: { Allow: {} } });
    expect(association.Properties).toEqual({
      ResourceArn: {
        'Fn::Sub': `arn:\${AWS::Partition}:apigateway:\${AWS::Region}::/restapis/\${ApiGatewayRestApi}/stages/${stage.Properties.StageName}`,
      },
      WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] },
    });
    // The association names the stage by its name: it must wait for the stage to exist.
    expect(association.DependsOn).toEqual([stageId]);
  });

  it('limits each address to WAF_RATE_LIMIT requests a minute, then bearer tokens, bodies, and AWS’s common rule set, blocking as told', () => {
    const [[, acl]] = resourcesOf('AWS::WAFv2::WebACL') as [[string, any]];
    const rules = acl.Properties.Rules;

    expect(rules.map((rule: any) => rule.Name)).toEqual([
      'per-address-rate',
      'bearer-shape',
      'bearer-issuer',
      'body-size',
      'aws-common-rule-set',
    ]);
    expect(rules[0].Statement.RateBasedStatement).toEqual({
      Limit: 540,
      EvaluationWindowSec: 60,
      AggregateKeyType: 'IP',
    });
    // WAF_ISSUER_RULE=block and WAF_COMMON_RULES=block: both refuse instead of counting.
    expect(rules[2].Action.Block.CustomResponse.ResponseCode).toBe(401);
    expect(rules[4].OverrideAction).toEqual({ None: {} });
    expect(rules[4].Statement.ManagedRuleGroupStatement).toMatchObject({
      VendorName: 'AWS',
      Name: 'AWSManagedRulesCommonRuleSet',
    });
  });
});

describe('operating it, given LOG_RETENTION_DAYS and ALARM_TOPIC_ARN', () => {
  it('keeps every log group that long, the access log too', () => {
    const groups = resourcesOf('AWS::Logs::LogGroup');

    expect(groups).toHaveLength(FUNCTIONS.length + 1);
    for (const [, group] of groups) expect(group.Properties.RetentionInDays).toBe(731);
  });

  it('sends every alarm, and its return to OK, to that topic', () => {
    const alarms = Object.values(alarmsOf(template));

    expect(alarms).toHaveLength(Object.keys(ALARMS).length);
    for (const alarm of alarms) {
      expect(actionsOf(template, alarm)).toEqual({
        alarm: [OPERATIONS_ENV.ALARM_TOPIC_ARN],
        ok: [OPERATIONS_ENV.ALARM_TOPIC_ARN],
      });
    }
  });
});
