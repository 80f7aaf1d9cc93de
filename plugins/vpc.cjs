'use strict';

/**
 * PayHere's live API answers only allow-listed IP addresses, so a live deployment runs its functions
 * in private subnets whose traffic leaves through a NAT gateway with an Elastic IP (docs/operator.md "The live
 * network path"). From `custom.vpc`, all comma-separated lists, empty by default:
 *
 *   vpc:
 *     subnetIds: subnet-0a1b2c3d,subnet-4e5f6a7b        # VPC_SUBNET_IDS
 *     securityGroupIds: sg-0123abcd                     # VPC_SECURITY_GROUP_IDS
 *     vpcId: vpc-0123abcd                               # VPC_ID
 *     routeTableIds: rtb-0123abcd,rtb-4567ef01          # VPC_ROUTE_TABLE_IDS
 *
 * With subnets and security groups, every function runs in them (`provider.vpc`, which osls
 * compiles into each function's VpcConfig; plugins/function-roles.cjs gives each role the network
 * interface permissions that needs). With a VPC and its route tables too, a gateway endpoint takes
 * the DynamoDB traffic past the NAT gateway. Without subnets nothing changes: no VPC at all.
 */
const IDS = {
  subnetIds: { variable: 'VPC_SUBNET_IDS', pattern: /^subnet-[0-9a-f]{8,17}$/ },
  securityGroupIds: { variable: 'VPC_SECURITY_GROUP_IDS', pattern: /^sg-[0-9a-f]{8,17}$/ },
  vpcId: { variable: 'VPC_ID', pattern: /^vpc-[0-9a-f]{8,17}$/ },
  routeTableIds: { variable: 'VPC_ROUTE_TABLE_IDS', pattern: /^rtb-[0-9a-f]{8,17}$/ },
};

class VpcPlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      'before:package:initialize': () => this.placeFunctions(),
      'after:aws:package:finalize:mergeCustomProviderResources': () => this.declareDynamoDbEndpoint(),
    };
  }

  fail(message) {
    throw new this.serverless.classes.Error(message);
  }

  /** Each setting as a list of ids, each id checked for its kind (a security group among subnets...). */
  settings() {
    const config = this.serverless.service.custom?.vpc ?? {};
    const settings = {};
    for (const [key, { variable, pattern }] of Object.entries(IDS)) {
      const ids = String(config[key] ?? '')
        .split(',')
        .map((id) => id.trim())
        .filter((id) => id !== '');
      const wrong = ids.find((id) => !pattern.test(id));
      if (wrong !== undefined)
        this.fail(`${variable} (custom.vpc.${key}) holds "${wrong}", not an id of its kind.`);
      settings[key] = ids;
    }
    const { subnetIds, securityGroupIds, vpcId, routeTableIds } = settings;
    if ((subnetIds.length === 0) !== (securityGroupIds.length === 0)) {
      this.fail(
        'VPC_SUBNET_IDS and VPC_SECURITY_GROUP_IDS go together: set both to run the functions in a VPC, or neither.',
      );
    }
    if ((vpcId.length === 0) !== (routeTableIds.length === 0)) {
      this.fail(
        'VPC_ID and VPC_ROUTE_TABLE_IDS go together: set both for the DynamoDB gateway endpoint, or neither.',
      );
    }
    if (vpcId.length > 1) this.fail('VPC_ID names one VPC.');
    if (vpcId.length === 1 && subnetIds.length === 0) {
      this.fail(
        'VPC_ID and VPC_ROUTE_TABLE_IDS serve functions in a VPC: set VPC_SUBNET_IDS and VPC_SECURITY_GROUP_IDS too.',
      );
    }
    return { subnetIds, securityGroupIds, vpcId: vpcId[0], routeTableIds };
  }

  placeFunctions() {
    const { subnetIds, securityGroupIds } = this.settings();
    if (subnetIds.length === 0) return;
    this.serverless.service.provider.vpc = { subnetIds, securityGroupIds };
  }

  declareDynamoDbEndpoint() {
    const { vpcId, routeTableIds } = this.settings();
    if (!vpcId) return;
    this.serverless.service.provider.compiledCloudFormationTemplate.Resources.DynamoDbVpcEndpoint = {
      Type: 'AWS::EC2::VPCEndpoint',
      Properties: {
        VpcId: vpcId,
        VpcEndpointType: 'Gateway',
        ServiceName: { 'Fn::Sub': `com.amazonaws.\${AWS::Region}.dynamodb` },
        RouteTableIds: routeTableIds,
      },
    };
  }
}

module.exports = VpcPlugin;
