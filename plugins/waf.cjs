'use strict';

const { namedMethods } = require('./routes.cjs');

/**
 * An AWS WAF web ACL on the API's stage, on unless `custom.waf.enabled` is false (serverless.yml
 * turns it off for the stage `local` only). AWS WAF looks at a request before anything of API
 * Gateway's, its throttle included (docs/operator.md "Strangers at the edge"):
 *
 *   waf:
 *     enabled: true                          # WAF_ENABLED
 *     rateLimit: 300                         # WAF_RATE_LIMIT: requests per address per minute
 *     issuer: https://auth.example.com/      # AUTH_ISSUER
 *     issuerRule: count                      # WAF_ISSUER_RULE: count or block
 *     commonRules: count                     # WAF_COMMON_RULES: count or block
 *     commonRuleSetSkips: [POST /gateway/notify]
 *     bearerSkips: [POST /gateway/notify]
 *
 * 0. per address: more than `rateLimit` requests from one IP address in the last minute, and its
 *    further requests are answered 429 `rate_limited` until it slows down. It must stay below every
 *    route's throttle (plugins/api-stage.cjs), or one address could take a route from everyone;
 * 1. a bearer token that is no compact JWS, exactly as the functions parse it
 *    (lib/http/auth/middleware.ts), on every route but `bearerSkips`: 401, as a function would;
 * 2. a bearer token whose payload cannot hold `"iss":"<issuer>"` as the issuer's JSON spells it:
 *    counted, or 401 with `issuerRule: block` (an issuer that writes its claims otherwise, spaces or
 *    escaped slashes, would have its tokens refused: watch the rule's counts first);
 * 3. a body over the functions' own limit (lib/http/request-guard.ts) is answered 413, as a
 *    function would;
 * 4. AWS's managed common rule set, on every route but `commonRuleSetSkips`: PayHere's
 *    notifications are signed, and a false match there would lose a saved card or a hold. It could
 *    refuse a legitimate body, so it counts only unless `commonRules: block`; its own 8 KB body
 *    rule always only counts, since the functions take 10 KiB and rule 3 decides.
 *
 * Rules 0 to 3 answer in the service's envelope, built by the functions' own code; the common rule
 * set's blocks get serverless.yml's WAF_FILTERED gateway response (403 `forbidden`).
 */
const WEB_ACL = 'WebAcl';
/** How far back AWS WAF counts an address's requests; 60, 120, 300 or 600 s. */
const RATE_WINDOW_SECONDS = 60;
/** What the functions accept as a bearer header (lib/http/auth/middleware.ts), spelled for AWS WAF. */
const BEARER_JWS = '^\\s*[Bb][Ee][Aa][Rr][Ee][Rr] +[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\s*$';
/** AWS WAF's longest search string for a byte match. */
const MAX_SEARCH_BYTES = 200;
const MODES = ['count', 'block'];

/**
 * The base64url characters `text` always becomes inside an encoded string, one per alignment (0, 1
 * or 2 bytes before it in its group of three): what the bytes around it share is left off. A JWT's
 * payload holding `text` anywhere holds one of the three.
 */
function base64urlFragments(text) {
  const bytes = Buffer.from(text, 'utf8');
  return [0, 1, 2].map((offset) => {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64url');
    return encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6));
  });
}

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
    this.checkBelowRoutes(rateLimit);
    const mode = (key, variable) => {
      const value = String(config[key] ?? 'count').trim();
      if (!MODES.includes(value)) {
        this.fail(`${variable} (custom.waf.${key}) is "${value}": it must be count or block.`);
      }
      return value;
    };
    return {
      rateLimit,
      issuer: String(config.issuer ?? '').trim(),
      issuerRule: mode('issuerRule', 'WAF_ISSUER_RULE'),
      commonRules: mode('commonRules', 'WAF_COMMON_RULES'),
    };
  }

  /** The paths of `custom.waf.<key>`, each a route of the compiled template. */
  skippedPaths(key) {
    const config = this.serverless.service.custom?.waf ?? {};
    const skips = namedMethods(this.serverless, config[key], `custom.waf.${key}`);
    return [...new Set(skips.map(({ path }) => path))];
  }

  /**
   * Refuses a per-address rate one address could fill a route's bucket with: every throttle of
   * `custom.apiStage` (plugins/api-stage.cjs), its default and each group's.
   */
  checkBelowRoutes(rateLimit) {
    const apiStage = this.serverless.service.custom?.apiStage ?? {};
    const rates = [apiStage.throttle, ...Object.values(apiStage)]
      .map((settings) => Number(settings?.rateLimit))
      .filter((rate) => rate > 0);
    if (rates.length === 0) return;
    const slowest = Math.min(...rates);
    const perSecond = rateLimit / RATE_WINDOW_SECONDS;
    if (!(perSecond < slowest)) {
      this.fail(
        `WAF_RATE_LIMIT (custom.waf.rateLimit) is ${rateLimit} a minute, ${perSecond} a second: it must stay below every route's throttle, the lowest of which is ${slowest} a second, or one address could take that route from everyone.`,
      );
    }
  }

  async declareWebAcl() {
    const settings = this.settings();
    if (!settings) return;
    const resources = this.serverless.service.provider.compiledCloudFormationTemplate.Resources;
    const stage = resources.ApiGatewayStage;
    if (!stage)
      this.fail('plugins/waf.cjs needs the stage plugins/api-stage.cjs declares: list it after that one.');
    const { MAX_BODY_BYTES } = await import('../lib/http/request-guard.ts');
    const { PayloadTooLargeError, RateLimitedError, UnauthorizedError } = await import(
      '../lib/envelope/errors.ts'
    );
    const { apiErrorAnswer } = await import('../lib/envelope/error-response.ts');
    const { MALFORMED } = await import('../lib/http/auth/middleware.ts');
    const { TOKEN_INVALID } = await import('../lib/http/auth/verify.ts');
    const name = `${this.serverless.service.service}-${stage.Properties.StageName}`;
    const bearerSkips = this.skippedPaths('bearerSkips');
    const answers = {
      'rate-limited': apiErrorAnswer(
        new RateLimitedError(
          'Too many requests from this address: wait a minute, then retry.',
          RATE_WINDOW_SECONDS,
        ),
      ),
      'payload-too-large': apiErrorAnswer(new PayloadTooLargeError(MAX_BODY_BYTES)),
      'bearer-malformed': apiErrorAnswer(new UnauthorizedError(MALFORMED)),
      'bearer-not-ours': apiErrorAnswer(new UnauthorizedError(TOKEN_INVALID)),
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
            Name: 'bearer-shape',
            Priority: 1,
            Statement: this.gated(bearerSkips, {
              NotStatement: {
                Statement: {
                  RegexMatchStatement: {
                    RegexString: BEARER_JWS,
                    FieldToMatch: { SingleHeader: { Name: 'authorization' } },
                    TextTransformations: [{ Priority: 0, Type: 'NONE' }],
                  },
                },
              },
            }),
            Action: block('bearer-malformed'),
            VisibilityConfig: visibility(`${name}-bearer-shape`),
          },
          ...this.issuerRule(settings, bearerSkips, block, visibility(`${name}-bearer-issuer`)),
          {
            Name: 'body-size',
            Priority: 3,
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
            Priority: 4,
            Statement: {
              ManagedRuleGroupStatement: {
                VendorName: 'AWS',
                Name: 'AWSManagedRulesCommonRuleSet',
                RuleActionOverrides: [{ Name: 'SizeRestrictions_BODY', ActionToUse: { Count: {} } }],
                ...this.scopeDown(this.skippedPaths('commonRuleSetSkips')),
              },
            },
            // Counting first: a managed rule could refuse a legitimate body.
            OverrideAction: settings.commonRules === 'block' ? { None: {} } : { Count: {} },
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

  /** `statement` on every request but those to the skipped paths and CORS preflights. */
  gated(paths, statement) {
    // A browser's CORS preflight (OPTIONS) never carries an Authorization header: it is not asked for one.
    const preflight = {
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
    };
    const scope = paths.length === 0 ? [] : [this.scopeDown(paths).ScopeDownStatement];
    return { AndStatement: { Statements: [...scope, preflight, statement] } };
  }

  /**
   * Rule 2: the payload of a bearer token holds the issuer's `iss` claim, as JSON.stringify spells
   * it, at one of its three alignments in base64url. Without an issuer, no rule.
   */
  issuerRule(settings, bearerSkips, block, visibilityConfig) {
    if (settings.issuer === '') return [];
    const claim = `"iss":${JSON.stringify(settings.issuer)}`;
    const fragments = base64urlFragments(claim);
    if (fragments.some((fragment) => Buffer.byteLength(fragment) > MAX_SEARCH_BYTES)) {
      this.fail(
        `AUTH_ISSUER (custom.waf.issuer) is too long for AWS WAF to look for in a token (${claim.length} characters as a claim): set WAF_ENABLED=false or use a shorter issuer.`,
      );
    }
    const holds = (fragment) => ({
      ByteMatchStatement: {
        FieldToMatch: { SingleHeader: { Name: 'authorization' } },
        PositionalConstraint: 'CONTAINS',
        SearchString: fragment,
        TextTransformations: [{ Priority: 0, Type: 'NONE' }],
      },
    });
    return [
      {
        Name: 'bearer-issuer',
        Priority: 2,
        Statement: this.gated(bearerSkips, {
          NotStatement: { Statement: { OrStatement: { Statements: fragments.map(holds) } } },
        }),
        Action: settings.issuerRule === 'block' ? block('bearer-not-ours') : { Count: {} },
        VisibilityConfig: visibilityConfig,
      },
    ];
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
module.exports.base64urlFragments = base64urlFragments;
module.exports.BEARER_JWS = BEARER_JWS;
