'use strict';

const { namedMethods } = require('./routes.cjs');

/**
 * An AWS WAF web ACL on the API's stage, off unless `custom.waf.enabled` (WAF_ENABLED=true). AWS
 * WAF looks at a request before anything of API Gateway's (docs/operator.md "Strangers at the edge"):
 *
 *   waf:
 *     enabled: true                          # WAF_ENABLED
 *     rateLimit: 300                         # WAF_RATE_LIMIT: requests per address per minute
 *     commonRuleSetSkips: [POST /gateway/notify]
 *
 * 1. per address: more than `rateLimit` requests from one IP address in the last minute, and its
 *    further requests are answered 429 `rate_limited` until it slows down;
 * 2. a body over the functions' own limit (lib/http/request-guard.ts) is answered 413, as a
 *    function would;
 * 3. AWS's managed common rule set, on every route but `commonRuleSetSkips`: PayHere's
 *    notifications are signed, and a false match there would lose a saved card or a hold. Its own
 *    8 KB body rule only counts, since the functions take 10 KiB and rule 2 decides.
 *
 * Rules 1 and 2 answer in the service's envelope, built by the functions' own code; the common rule
 * set's blocks get serverless.yml's WAF_FILTERED gateway response (403 `forbidden`).
 */
const WEB_ACL = 'WebAcl';
/** How far back AWS WAF counts an address's requests; 60, 120, 300 or 600 s. */
const RATE_WINDOW_SECONDS = 60;

class WafPlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.hooks = {
      // A wrong setting stops the package before anything is built.
      'before:package:initialize': () => this.settings(),
      'after:aws:package:finalize:mergeCustomProviderResources': () => this.declareWebAcl(),
    };
  }

  fail(message) {
    throw new this.serverless.classes.Error(message);
  }

  /** `custom.waf`'s switch and limit, checked: undefined when off. */
  settings() {
    const config = this.serverless.service.custom?.waf ?? {};
    const enabled = String(config.enabled ?? 'false').trim();
    if (enabled !== 'true' && enabled !== 'false') {
      this.fail(`WAF_ENABLED (custom.waf.enabled) is "${enabled}": it must be true or false.`);
    }
    if (enabled === 'false') return undefined;
    const rateLimit = Number(config.rateLimit);
    // AWS WAF's lowest rate limit is 10 requests per window.
    if (!Number.isInteger(rateLimit) || rateLimit < 10) {
      this.fail(
        `WAF_RATE_LIMIT (custom.waf.rateLimit) is "${config.rateLimit}": it must be a whole number of requests per address per minute, at least 10.`,
      );
    }
    return { rateLimit };
  }

  /** The paths of `custom.waf.commonRuleSetSkips`, each a route of the compiled template. */
  skippedPaths() {
    const config = this.serverless.service.custom?.waf ?? {};
    const skips = namedMethods(this.serverless, config.commonRuleSetSkips, 'custom.waf.commonRuleSetSkips');
    return [...new Set(skips.map(({ path }) => path))];
  }

  async declareWebAcl() {
    const settings = this.settings();
    if (!settings) return;
    const resources = this.serverless.service.provider.compiledCloudFormationTemplate.Resources;
    const stage = resources.ApiGatewayStage;
    if (!stage)
      this.fail('plugins/waf.cjs needs the stage plugins/api-stage.cjs declares: list it after that one.');
    const { MAX_BODY_BYTES } = await import('../lib/http/request-guard.ts');
    const { PayloadTooLargeError, RateLimitedError } = await import('../lib/envelope/errors.ts');
    const { apiErrorAnswer } = await import('../lib/envelope/error-response.ts');
    const name = `${this.serverless.service.service}-${stage.Properties.StageName}`;
    const answers = {
      'rate-limited': apiErrorAnswer(
        new RateLimitedError(
          'Too many requests from this address: wait a minute, then retry.',
          RATE_WINDOW_SECONDS,
        ),
      ),
      'payload-too-large': apiErrorAnswer(new PayloadTooLargeError(MAX_BODY_BYTES)),
    };
    const block = (key) => ({
      Block: {
        CustomResponse: {
          ResponseCode: answers[key].statusCode,
          CustomResponseBodyKey: key,
          // AWS WAF sets Content-Type from the body's type and takes no header of that name.
          ResponseHeaders: Object.entries(answers[key].headers)
            .filter(([header]) => header.toLowerCase() !== 'content-type')
            .map(([header, value]) => ({ Name: header, Value: String(value) })),
        },
      },
    });
    const visibility = (metric) => ({
      CloudWatchMetricsEnabled: true,
      MetricName: metric,
      SampledRequestsEnabled: true,
    });

    resources[WEB_ACL] = {
      Type: 'AWS::WAFv2::WebACL',
      Properties: {
        Name: name,
        // API Gateway's REST APIs take a regional web ACL, edge-optimized ones too.
        Scope: 'REGIONAL',
        DefaultAction: { Allow: {} },
        VisibilityConfig: visibility(name),
        CustomResponseBodies: Object.fromEntries(
          Object.entries(answers).map(([key, answer]) => [
            key,
            { ContentType: 'APPLICATION_JSON', Content: answer.body },
          ]),
        ),
        Rules: [
          {
            Name: 'per-address-rate',
            Priority: 0,
            Statement: {
              RateBasedStatement: {
                Limit: settings.rateLimit,
                EvaluationWindowSec: RATE_WINDOW_SECONDS,
                AggregateKeyType: 'IP',
              },
            },
            Action: block('rate-limited'),
            VisibilityConfig: visibility(`${name}-per-address-rate`),
          },
          {
            Name: 'body-size',
            Priority: 1,
            Statement: {
              SizeConstraintStatement: {
                // Beyond what API Gateway hands AWS WAF to inspect (16 KB) counts as too large too.
                FieldToMatch: { Body: { OversizeHandling: 'MATCH' } },
                ComparisonOperator: 'GT',
                Size: MAX_BODY_BYTES,
                TextTransformations: [{ Priority: 0, Type: 'NONE' }],
              },
            },
            Action: block('payload-too-large'),
            VisibilityConfig: visibility(`${name}-body-size`),
          },
          {
            Name: 'aws-common-rule-set',
            Priority: 2,
            Statement: {
              ManagedRuleGroupStatement: {
                VendorName: 'AWS',
                Name: 'AWSManagedRulesCommonRuleSet',
                RuleActionOverrides: [{ Name: 'SizeRestrictions_BODY', ActionToUse: { Count: {} } }],
                ...this.scopeDown(this.skippedPaths()),
              },
            },
            OverrideAction: { None: {} },
            VisibilityConfig: visibility(`${name}-aws-common-rule-set`),
          },
        ],
      },
    };
    resources.WebAclAssociation = {
      Type: 'AWS::WAFv2::WebACLAssociation',
      DependsOn: ['ApiGatewayStage'],
      Properties: {
        ResourceArn: {
          'Fn::Sub': `arn:\${AWS::Partition}:apigateway:\${AWS::Region}::/restapis/\${ApiGatewayRestApi}/stages/${stage.Properties.StageName}`,
        },
        WebACLArn: { 'Fn::GetAtt': [WEB_ACL, 'Arn'] },
      },
    };
  }

  /**
   * The common rule set's scope: every request but those whose path ends with a skipped route's
   * (AWS WAF sees the stage, or a custom domain's base path, in front of it).
   */
  scopeDown(paths) {
    if (paths.length === 0) return {};
    const endsWith = (path) => ({
      ByteMatchStatement: {
        FieldToMatch: { UriPath: {} },
        PositionalConstraint: 'ENDS_WITH',
        SearchString: path,
        TextTransformations: [{ Priority: 0, Type: 'NONE' }],
      },
    });
    const skipped =
      paths.length === 1 ? endsWith(paths[0]) : { OrStatement: { Statements: paths.map(endsWith) } };
    return { ScopeDownStatement: { NotStatement: { Statement: skipped } } };
  }
}

module.exports = WafPlugin;
