'use strict';

/**
 * One IAM role per function, holding exactly what that function uses (docs/contract.md "Least privilege"),
 * declared in `custom.functionRoles`:
 *
 *   functionRoles:
 *     secretArn: <the gateway secret's ARN>
 *     webhooksSecretArn: <the webhook endpoints' secret's ARN>
 *     tables: { idempotency: IdempotencyTable, ledger: LedgerTable }   # logical ids in Resources
 *     queryIndex: { idempotency: [settle], ledger: [settle, charges] }   # per table, the indexes a Query may use
 *     functions:
 *       charge: { secret: true, idempotency: [GetItem, PutItem], ledger: [GetItem] }
 *       listOrders: { ledger: [Query], queryIndex: { ledger: [orders] } }   # its own indexes only
 *
 * Each role may write its own function's logs, send the listed item actions to each listed table
 * (`Query` to its `queryIndex` indexes only, never the table),
 * read the gateway secret if `secret` is set and the webhook endpoints' if `webhooksSecret` is; a function placed in a VPC (plugins/vpc.cjs) may also
 * manage its network interfaces. A function without an entry fails the package: nothing falls
 * back to a shared role that holds more than it needs.
 */
class FunctionRolesPlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      'before:package:initialize': () => this.assignRoles(),
      'after:aws:package:finalize:mergeCustomProviderResources': () => this.declareRoles(),
    };
  }

  config() {
    const config = this.serverless.service.custom?.functionRoles;
    if (!config?.functions || !config.tables) {
      throw new this.serverless.classes.Error('custom.functionRoles needs `tables` and `functions`.');
    }
    return config;
  }

  roleName(functionName) {
    return `${functionName[0].toUpperCase()}${functionName.slice(1)}Role`;
  }

  assignRoles() {
    const { functions } = this.config();
    for (const name of this.serverless.service.getAllFunctions()) {
      if (!functions[name]) {
        throw new this.serverless.classes.Error(`custom.functionRoles.functions has no entry for ${name}.`);
      }
      this.serverless.service.getFunction(name).role = this.roleName(name);
    }
  }

  declareRoles() {
    const config = this.config();
    const resources = this.serverless.service.provider.compiledCloudFormationTemplate.Resources;
    for (const name of this.serverless.service.getAllFunctions()) {
      const access = config.functions[name];
      const statements = [...this.logStatements(this.serverless.service.getFunction(name).name)];
      for (const [table, logicalId] of Object.entries(config.tables)) {
        const actions = (access[table] ?? []).filter((action) => action !== 'Query');
        const arn = { 'Fn::GetAtt': [logicalId, 'Arn'] };
        if (actions.length > 0) {
          statements.push({
            Effect: 'Allow',
            Action: actions.map((action) => `dynamodb:${action}`),
            Resource: [arn],
          });
        }
        // A Query is sent to the indexes `queryIndex` names (the settle job's), never to the table itself.
        if ((access[table] ?? []).includes('Query')) {
          // A function may name its own indexes (the order lists'); otherwise the table's (the settle job's).
          const named = access.queryIndex ?? config.queryIndex ?? [];
          const indexes = [
            typeof named === 'object' && !Array.isArray(named) ? (named[table] ?? []) : named,
          ].flat();
          if (indexes.length === 0) {
            throw new this.serverless.classes.Error('custom.functionRoles needs `queryIndex` for Query.');
          }
          statements.push({
            Effect: 'Allow',
            Action: ['dynamodb:Query'],
            Resource: indexes.map((index) => ({ 'Fn::Join': ['', [arn, `/index/${index}`]] })),
          });
        }
      }
      if (access.secret) {
        statements.push({
          Effect: 'Allow',
          Action: ['secretsmanager:GetSecretValue'],
          Resource: [config.secretArn],
        });
      }
      if (access.webhooksSecret) {
        if (!config.webhooksSecretArn) {
          throw new this.serverless.classes.Error('custom.functionRoles needs `webhooksSecretArn`.');
        }
        statements.push({
          Effect: 'Allow',
          Action: ['secretsmanager:GetSecretValue'],
          Resource: [config.webhooksSecretArn],
        });
      }
      if (this.inVpc(name)) statements.push(...this.networkInterfaceStatements());
      resources[this.roleName(name)] = {
        Type: 'AWS::IAM::Role',
        Properties: {
          AssumeRolePolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Effect: 'Allow',
                Principal: { Service: ['lambda.amazonaws.com'] },
                Action: ['sts:AssumeRole'],
              },
            ],
          },
          Policies: [
            {
              PolicyName: `${name}-access`,
              PolicyDocument: { Version: '2012-10-17', Statement: statements },
            },
          ],
        },
      };
    }
  }

  inVpc(functionName) {
    const logicalId = this.serverless.getProvider('aws').naming.getLambdaLogicalId(functionName);
    const resources = this.serverless.service.provider.compiledCloudFormationTemplate.Resources;
    return resources[logicalId]?.Properties?.VpcConfig !== undefined;
  }

  /**
   * What Lambda does with the function's role to connect it to its subnets: the EC2 actions of the
   * AWS managed policy AWSLambdaVPCAccessExecutionRole, written here instead of attaching it because
   * that policy also grants writing to every log group in the account. The two Describe actions
   * take no resource; the others are held to this account and region. Inline in the role, so that
   * they exist before the function is created with its VpcConfig.
   */
  networkInterfaceStatements() {
    return [
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
    ];
  }

  /** The function's own log group: create it and its streams, and write to them. */
  logStatements(functionName) {
    const logGroup = (suffix) => ({
      'Fn::Sub': `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:/aws/lambda/${functionName}${suffix}`,
    });
    return [
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:TagResource'],
        Resource: [logGroup(':*')],
      },
      { Effect: 'Allow', Action: ['logs:PutLogEvents'], Resource: [logGroup(':*:*')] },
    ];
  }
}

module.exports = FunctionRolesPlugin;
