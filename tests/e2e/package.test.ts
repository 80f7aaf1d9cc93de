import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNER_FILES } from '../../bench/build.ts';
import { readZip } from '../../bench/zip.ts';
import { LISTED_ATTRIBUTES } from '../../lib/ledger/order-lists.ts';
import { METRICS_NAMESPACE } from '../../lib/log/metrics.ts';
import { describedRoutes } from '../../openapi/routes.ts';
import { ALARMS, actionsOf, alarmsOf } from '../helpers/alarms.ts';
import type { Template } from '../helpers/package.ts';
import { FUNCTIONS, NOTIFY_ROUTE, ROUTES } from '../helpers/routes.ts';
import { GENEROUS_SHARES, LOOK_AGAIN_AT_ONCE } from '../helpers/test-environment.ts';

const run = promisify(execFile);
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');

let out: string;
let template: Template;

beforeAll(async () => {
  out = await mkdtemp(path.join(tmpdir(), 'payhere-package-'));
  // `npm run package` runs exactly this; no AWS credentials are needed to package.
  await run(process.execPath, [slsBin, 'package', '--stage', 'test', '--package', out], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    // Deployed defaults: nothing in this environment may override them.
    env: {
      ...process.env,
      ESBUILD_WORK_FOLDER: '.esbuild-package-test',
      // The one variable a deployed stage must set (plugins/deploy-guard.cjs).
      GATEWAY_BASE_URL: 'https://www.payhere.lk',
      GATEWAY_RATE_LIMIT: undefined,
      GATEWAY_RATE_LIMIT_FALLBACK: undefined,
      IDEMPOTENCY_TTL_SECONDS: undefined,
      STATE_TABLE: undefined,
      // tests/setup/environment.ts sets these for the other tests.
      ...Object.fromEntries(
        Object.keys({ ...GENEROUS_SHARES, ...LOOK_AGAIN_AT_ONCE }).map((name) => [name, undefined]),
      ),
    },
  });
  template = JSON.parse(await readFile(path.join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('osls package', () => {
  it('produces one artifact per function', async () => {
    const zips = (await readdir(out)).filter((file) => file.endsWith('.zip')).sort();

    expect(zips).toEqual(FUNCTIONS.map((name) => `${name}.zip`).sort());
  });

  it('declares every function on nodejs24.x arm64 with its route', () => {
    const functions = Object.entries(template.Resources).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function',
    );
    const methods = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::ApiGateway::Method' && r.Properties.HttpMethod !== 'OPTIONS')
      .map((r) => r.Properties.HttpMethod)
      .sort();

    expect(functions).toHaveLength(FUNCTIONS.length);
    for (const [name, fn] of functions) {
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      // API Gateway gives up on a function sooner; the settle job, the event relay and the webhook
      // deliverer, on a schedule, end before their next runs.
      const runsEvery: Record<string, number> = {
        SettleLambdaFunction: 120,
        RelayEventsLambdaFunction: 60,
        DeliverWebhooksLambdaFunction: 60,
      };
      expect(fn.Properties.Timeout).toBeLessThan(runsEvery[name] ?? 29);
    }
    expect(methods).toEqual([...Object.values(ROUTES), NOTIFY_ROUTE].map((r) => r.method).sort());
  });
});

/**
 * docs/contract.md "Least privilege": what each function may send to each table, written out here from what
 * its code does (lib/idempotency/store.ts, lib/ledger/store.ts, lib/budget/state-table.ts,
 * lib/reads/store.ts), so that a role granting more fails. Every function that calls PayHere shares
 * its budget and token, and reads or drops shared answers with the same actions.
 */
const STATE = ['GetItem', 'PutItem', 'UpdateItem'];
/** The events its ledger writes recorded, published after the answer (lib/events/relay.ts). */
const PUBLISH = ['PutItem'];
const ACCESS: Record<
  string,
  {
    idempotency?: string[];
    ledger?: string[];
    state?: string[];
    /** The events table (lib/events/): functions whose ledger writes record events publish them. */
    events?: string[];
    secret: boolean;
    /** The webhook endpoints' secret (deliverWebhooks only). */
    webhooksSecret?: boolean;
    /** The tables whose indexes (never the table itself) it may Query. */
    indexQueries?: string[];
    /** Those indexes, when not the settle job's. */
    queryIndexes?: string[];
  }
> = {
  charge: {
    idempotency: ['DeleteItem', 'GetItem', 'PutItem', 'UpdateItem'],
    ledger: ['GetItem', 'PutItem', 'UpdateItem'],
    state: STATE,
    events: PUBLISH,
    secret: true,
  },
  capture: {
    idempotency: ['DeleteItem', 'GetItem', 'PutItem', 'UpdateItem'],
    // Proves a captured hold's token.
    ledger: ['GetItem', 'UpdateItem'],
    state: STATE,
    events: PUBLISH,
    secret: true,
  },
  refund: {
    idempotency: ['DeleteItem', 'GetItem', 'PutItem', 'UpdateItem'],
    // Drops a refunded order's kept payments.
    ledger: ['GetItem', 'UpdateItem'],
    state: STATE,
    events: PUBLISH,
    secret: true,
  },
  retrySubscription: {
    idempotency: ['DeleteItem', 'GetItem', 'PutItem', 'UpdateItem'],
    ledger: ['GetItem'],
    state: STATE,
    secret: true,
  },
  // Keeps a final order's payments on its ledger item.
  retrievePayments: { ledger: ['GetItem', 'UpdateItem'], state: STATE, secret: true },
  listSubscriptions: { ledger: ['GetItem'], state: STATE, secret: true },
  getSubscription: { ledger: ['GetItem'], state: STATE, secret: true },
  subscriptionPayments: { ledger: ['GetItem'], state: STATE, secret: true },
  // An optional Idempotency-Key; keeps a cancelled subscription's state on the ledger.
  cancelSubscription: {
    idempotency: ['DeleteItem', 'GetItem', 'PutItem', 'UpdateItem'],
    ledger: ['GetItem', 'UpdateItem'],
    state: STATE,
    events: PUBLISH,
    secret: true,
  },
  createCheckout: { ledger: ['GetItem', 'PutItem'], secret: true },
  getCheckout: { ledger: ['GetItem', 'PutItem', 'UpdateItem'], state: STATE, events: PUBLISH, secret: true },
  notify: { ledger: ['GetItem', 'PutItem', 'UpdateItem'], state: STATE, events: PUBLISH, secret: true },
  // Reads the order lists' indexes only: never the table, never PayHere, no secret.
  listOrders: {
    secret: false,
    indexQueries: ['LedgerTable'],
    queryIndexes: ['orders', 'owner-orders', 'state-orders'],
  },
  // Reads a payment's reference, refund item and order: never PayHere, no secret.
  paymentRefunds: { ledger: ['GetItem'], secret: false },
  // The range's orders from the list of every order (that index only), refund items in batches;
  // PayHere's snapshots in the state table beside the budget; PayHere's status of a refunded
  // payment its searches read, on the payment's refund item (its one ledger write).
  reconciliationReport: {
    ledger: ['BatchGetItem', 'UpdateItem'],
    state: ['BatchGetItem', 'GetItem', 'PutItem', 'UpdateItem'],
    secret: true,
    indexQueries: ['LedgerTable'],
    queryIndexes: ['orders'],
  },
  // Claims and settles money records, moves orders, indexes payments; queries the settle indexes only.
  settle: {
    idempotency: ['GetItem', 'UpdateItem'],
    ledger: ['GetItem', 'PutItem', 'UpdateItem'],
    state: STATE,
    events: PUBLISH,
    secret: true,
    indexQueries: ['IdempotencyTable', 'LedgerTable'],
  },
  // The events' feed: the events table's feed index only; no PayHere, no secret.
  listEvents: { secret: false, indexQueries: ['EventsTable'], queryIndexes: ['feed', 'object'] },
  // The relay: the ledger's outbox index, each item read and its outbox emptied, each event published.
  relayEvents: {
    ledger: ['GetItem', 'UpdateItem'],
    events: PUBLISH,
    secret: false,
    indexQueries: ['LedgerTable'],
    queryIndexes: ['outbox'],
  },
  // Queries the events' `due` index only, leases events and writes their results, keeps each
  // endpoint's failing streak; the webhooks secret, never PayHere's.
  deliverWebhooks: {
    events: ['GetItem', 'UpdateItem'],
    secret: false,
    webhooksSecret: true,
    indexQueries: ['EventsTable'],
    queryIndexes: ['due'],
  },
  // The merchant's deliveries: the events' feed index only.
  webhookDeliveries: { secret: false, indexQueries: ['EventsTable'], queryIndexes: ['feed'] },
  // Reads the event, makes its deliveries due, enables a disabled endpoint.
  redeliverEvent: { events: ['GetItem', 'UpdateItem'], secret: false },
};

const logicalName = (name: string) => `${name[0]!.toUpperCase()}${name.slice(1)}`;
const roleOf = (name: string) =>
  template.Resources[`${logicalName(name)}LambdaFunction`]!.Properties.Role['Fn::GetAtt'][0];
const statementsOf = (role: string): any[] =>
  template.Resources[role]!.Properties.Policies.flatMap((policy: any) => policy.PolicyDocument.Statement);

/** The settle job's index (lib/settle/): sparse, by queue and due time, keys only. */
const SETTLE_INDEX = {
  IndexName: 'settle',
  KeySchema: [
    { AttributeName: 'settleQueue', KeyType: 'HASH' },
    { AttributeName: 'settleAt', KeyType: 'RANGE' },
  ],
  Projection: { ProjectionType: 'KEYS_ONLY' },
};

/** The ledger's open charges (lib/settle/): sparse, by queue and due time, keys only. */
const CHARGES_INDEX = {
  IndexName: 'charges',
  KeySchema: [
    { AttributeName: 'chargeQueue', KeyType: 'HASH' },
    { AttributeName: 'chargeDueAt', KeyType: 'RANGE' },
  ],
  Projection: { ProjectionType: 'KEYS_ONLY' },
};

/** The order lists (lib/ledger/order-lists.ts): by position, over every order, an owner's, a state's. */
const listed = (hash: string) => ({
  IndexName: { listed: 'orders', owner: 'owner-orders', state: 'state-orders' }[hash],
  KeySchema: [
    { AttributeName: hash, KeyType: 'HASH' },
    { AttributeName: 'listedAt', KeyType: 'RANGE' },
  ],
  Projection: {
    ProjectionType: 'INCLUDE',
    NonKeyAttributes: [...LISTED_ATTRIBUTES].filter((attribute) => attribute !== hash),
  },
});
const ORDER_LIST_INDEXES = [listed('listed'), listed('owner'), listed('state')];

/** A queue of items by due time (sparse, keys only): the ledger's events not relayed yet, the deliveries due. */
const queue = (name: string, queue: string, due: string) => ({
  IndexName: name,
  KeySchema: [
    { AttributeName: queue, KeyType: 'HASH' },
    { AttributeName: due, KeyType: 'RANGE' },
  ],
  Projection: { ProjectionType: 'KEYS_ONLY' },
});

describe('the settle job', () => {
  it('runs on a schedule, every two minutes, and is reached by nothing else', () => {
    const rules = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Events::Rule');
    const scheduled = (name: string) =>
      rules.filter((rule) =>
        rule.Properties.Targets.some((target: any) => target.Arn['Fn::GetAtt'][0] === name),
      );
    const permissions = Object.values(template.Resources).filter(
      (r) =>
        r.Type === 'AWS::Lambda::Permission' &&
        JSON.stringify(r.Properties.FunctionName).includes('SettleLambdaFunction'),
    );

    expect(
      scheduled('SettleLambdaFunction').map((rule) => [
        rule.Properties.ScheduleExpression,
        rule.Properties.State,
      ]),
    ).toEqual([['rate(2 minutes)', 'ENABLED']]);
    expect(permissions.map((permission) => permission.Properties.Principal)).toEqual([
      'events.amazonaws.com',
    ]);
  });
});

describe('the event relay', () => {
  it('runs on a schedule, every minute', () => {
    const rules = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Events::Rule');
    const relays = rules.filter((rule) =>
      rule.Properties.Targets.some(
        (target: any) => target.Arn['Fn::GetAtt'][0] === 'RelayEventsLambdaFunction',
      ),
    );

    expect(relays.map((rule) => [rule.Properties.ScheduleExpression, rule.Properties.State])).toEqual([
      ['rate(1 minute)', 'ENABLED'],
    ]);
  });
});

describe('the webhook deliverer', () => {
  it('runs on a schedule, every minute, and is reached by nothing else', () => {
    const rules = Object.values(template.Resources).filter(
      (r) =>
        r.Type === 'AWS::Events::Rule' &&
        JSON.stringify(r.Properties.Targets).includes('DeliverWebhooksLambdaFunction'),
    );
    const permissions = Object.values(template.Resources).filter(
      (r) =>
        r.Type === 'AWS::Lambda::Permission' &&
        JSON.stringify(r.Properties.FunctionName).includes('DeliverWebhooksLambdaFunction'),
    );

    expect(rules.map((rule) => [rule.Properties.ScheduleExpression, rule.Properties.State])).toEqual([
      ['rate(1 minute)', 'ENABLED'],
    ]);
    expect(
      rules.flatMap((rule) => rule.Properties.Targets).map((target) => target.Arn['Fn::GetAtt'][0]),
    ).toEqual(['DeliverWebhooksLambdaFunction']);
    expect(permissions.map((permission) => permission.Properties.Principal)).toEqual([
      'events.amazonaws.com',
    ]);
  });

  it('reads the webhook endpoints from their own secret, and no function has a webhook URL or secret in its environment', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        MERCHANT_WEBHOOKS_SECRET_ID: 'payhere-payments-api/test/webhooks',
        MERCHANT_WEBHOOK_URL: '',
        MERCHANT_WEBHOOK_SECRET: '',
      });
    }
  });
});

describe('the tables in the packaged template', () => {
  const tables = () =>
    Object.fromEntries(
      Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::DynamoDB::Table'),
    ) as Record<string, { Properties: any; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;

  it('are the idempotency store, the ledger, the shared state and the events, nothing else', () => {
    expect(Object.keys(tables()).sort()).toEqual([
      'EventsTable',
      'IdempotencyTable',
      'LedgerTable',
      'StateTable',
    ]);
  });

  it('keep idempotency records on demand, keyed by pk, expired by TTL, with point-in-time recovery, retained', () => {
    const table = tables().IdempotencyTable!;

    expect(table.Properties).toMatchObject({
      TableName: 'payhere-payments-api-test-idempotency',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([SETTLE_INDEX]);
    expect(table.DeletionPolicy).toBe('Retain');
  });

  it('keep the ledger on demand, keyed by pk, with point-in-time recovery, retained and protected; only what carries expiresAt expires', () => {
    const table = tables().LedgerTable!;

    expect(table.Properties).toMatchObject({
      TableName: 'payhere-payments-api-test-ledger',
      BillingMode: 'PAY_PER_REQUEST',
      DeletionProtectionEnabled: true,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    // Orders and references never carry `expiresAt`: only notifications' identities and what is kept apart.
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      SETTLE_INDEX,
      CHARGES_INDEX,
      ...ORDER_LIST_INDEXES,
      queue('outbox', 'outboxQueue', 'outboxAt'),
    ]);
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
  });

  it('keep the events on demand, keyed by pk, in a feed, by object and in a queue of deliveries, expired by TTL, with point-in-time recovery, retained', () => {
    const table = tables().EventsTable!;

    expect(table.Properties).toMatchObject({
      TableName: 'payhere-payments-api-test-events',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'feed',
        KeySchema: [
          { AttributeName: 'feed', KeyType: 'HASH' },
          { AttributeName: 'feedKey', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
      {
        IndexName: 'object',
        KeySchema: [
          { AttributeName: 'objectId', KeyType: 'HASH' },
          { AttributeName: 'feedKey', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
      queue('due', 'dueQueue', 'dueAt'),
    ]);
    expect(table.DeletionPolicy).toBe('Retain');
  });

  it('keep the shared state on demand, keyed by pk, expired by TTL, without backups, not retained', () => {
    const table = tables().StateTable!;

    expect(table.Properties).toMatchObject({
      TableName: 'payhere-payments-api-test-state',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
    expect(table.Properties.PointInTimeRecoverySpecification).toBeUndefined();
    expect(table.DeletionPolicy).toBeUndefined();
  });

  it('are named to every function, and no deployed function has a local endpoint', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        IDEMPOTENCY_TABLE: 'payhere-payments-api-test-idempotency',
        LEDGER_TABLE: 'payhere-payments-api-test-ledger',
        STATE_TABLE: 'payhere-payments-api-test-state',
        EVENTS_TABLE: 'payhere-payments-api-test-events',
      });
      expect(fn.Properties.Environment.Variables.DYNAMODB_ENDPOINT ?? '').toBe('');
    }
  });
});

describe('each function role', () => {
  it('covers every function, and no two functions share one', () => {
    expect(Object.keys(ACCESS).sort()).toEqual([...FUNCTIONS].sort());
    expect(new Set(Object.keys(ACCESS).map(roleOf)).size).toBe(Object.keys(ACCESS).length);
    expect(template.Resources.IamRoleLambdaExecution).toBeUndefined();
  });

  it.each(Object.keys(ACCESS))('%s reaches exactly the tables, actions and secret it uses', (name) => {
    const statements = statementsOf(roleOf(name));
    const onTable = (table: string) =>
      statements
        .filter(
          (statement) =>
            JSON.stringify(statement.Resource) === JSON.stringify([{ 'Fn::GetAtt': [table, 'Arn'] }]),
        )
        .flatMap((statement) => [statement.Action].flat())
        .sort();
    const dynamoActions = statements
      .flatMap((statement) => [statement.Action].flat())
      .filter((a: string) => a.startsWith('dynamodb:'));
    const secretActions = statements
      .flatMap((statement) => [statement.Action].flat())
      .filter((a: string) => a.startsWith('secretsmanager:'));
    const access = ACCESS[name]!;

    expect(onTable('IdempotencyTable')).toEqual(
      (access.idempotency ?? []).map((action) => `dynamodb:${action}`),
    );
    expect(onTable('LedgerTable')).toEqual((access.ledger ?? []).map((action) => `dynamodb:${action}`));
    expect(onTable('StateTable')).toEqual((access.state ?? []).map((action) => `dynamodb:${action}`));
    expect(onTable('EventsTable')).toEqual((access.events ?? []).map((action) => `dynamodb:${action}`));
    const queries = statements.filter((statement) => [statement.Action].flat().includes('dynamodb:Query'));
    expect(queries.map((statement) => statement.Resource)).toEqual(
      (access.indexQueries ?? []).map((table) =>
        (access.queryIndexes ?? (table === 'LedgerTable' ? ['settle', 'charges'] : ['settle'])).map(
          (index) => ({
            'Fn::Join': ['', [{ 'Fn::GetAtt': [table, 'Arn'] }, `/index/${index}`]],
          }),
        ),
      ),
    );
    expect(dynamoActions).toHaveLength(
      (access.idempotency ?? []).length +
        (access.ledger ?? []).length +
        (access.state ?? []).length +
        (access.events ?? []).length +
        (access.indexQueries ?? []).length,
    );
    expect(secretActions).toEqual(
      [access.secret, access.webhooksSecret].filter(Boolean).map(() => 'secretsmanager:GetSecretValue'),
    );
    const secrets = statements
      .filter((statement) => [statement.Action].flat().includes('secretsmanager:GetSecretValue'))
      .map((statement) => JSON.stringify(statement.Resource));
    expect(secrets.filter((resource) => resource.includes('/webhooks-'))).toHaveLength(
      access.webhooksSecret ? 1 : 0,
    );
  });

  it.each(Object.keys(ACCESS))('%s writes only its own log group', (name) => {
    const logStatements = statementsOf(roleOf(name)).filter((statement) =>
      [statement.Action].flat().some((action: string) => action.startsWith('logs:')),
    );

    expect(logStatements.length).toBeGreaterThan(0);
    for (const statement of logStatements) {
      for (const resource of statement.Resource) {
        expect(resource['Fn::Sub']).toMatch(
          new RegExp(`:log-group:/aws/lambda/payhere-payments-api-test-${name}:\\*`),
        );
      }
    }
  });
});

describe('deployed defaults', () => {
  it("keep every function under PayHere's 20 requests per 10 s and idempotent answers for 7 days", () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        GATEWAY_RATE_LIMIT: '20/10000',
        GATEWAY_RATE_LIMIT_FALLBACK: '2/10000',
        IDEMPOTENCY_TTL_SECONDS: '604800',
      });
    }
  });

  it('give each caller its share (docs/budget.md "Each caller\'s share"), limit an order\'s declined charges, and look for an unknown at most every 30 s', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        CALLER_RATE_LIMIT: '3/10000',
        // Empty: the code's caps (a customer 8 calls per window, the merchant none, notifications
        // their share), never below a share raised alone.
        CALLER_RATE_CAP: '',
        CALLER_MONEY_RATE_LIMIT: '6/60000',
        MERCHANT_RATE_LIMIT: '10/10000',
        MERCHANT_RATE_CAP: '',
        MERCHANT_MONEY_RATE_LIMIT: '120/60000',
        NOTIFY_RATE_LIMIT: '4/10000',
        NOTIFY_RATE_CAP: '',
        ORDER_FAILED_ATTEMPTS: '3/3600000',
        UNKNOWN_LOOK_AGAIN_SECONDS: '30',
      });
    }
  });

  /**
   * PayHere's limit holds whichever containers the state table fails only while the containers with
   * shares of their own are no more than GATEWAY_FALLBACK_CONTAINERS says (docs/budget.md "The
   * fallback"): the template must bound them by the functions' reserved concurrency, or give none a
   * share (the default, which needs no bound).
   */
  it('bound the containers’ own shares by the reserved concurrency of the functions that have them, and give no function one', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    const withShares = functions.filter(
      (fn) => Number(fn.Properties.Environment?.Variables?.GATEWAY_FALLBACK_CONTAINERS ?? 0) > 0,
    );
    const counted = new Set(
      withShares.map((fn) => Number(fn.Properties.Environment.Variables.GATEWAY_FALLBACK_CONTAINERS)),
    );
    const reserved = withShares.map((fn) => fn.Properties.ReservedConcurrentExecutions as number | undefined);
    expect(counted.size).toBeLessThanOrEqual(1);
    expect(reserved.every((value) => typeof value === 'number')).toBe(true);
    expect(reserved.reduce<number>((sum, value) => sum + (value ?? 0), 0)).toBeLessThanOrEqual(
      [...counted][0] ?? 0,
    );
    expect(withShares).toEqual([]);
  });
});

describe('operating it: logs, metrics and alarms (docs/operator.md "Operating it")', () => {
  const SERVICE = 'payhere-payments-api-test';

  it("keeps every function's logs, and so the audit trail, and the API's access log a year", () => {
    const groups = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Logs::LogGroup');

    // One per function, and the stage's access log (plugins/api-stage.cjs).
    expect(groups).toHaveLength(FUNCTIONS.length + 1);
    for (const group of groups) expect(group.Properties.RetentionInDays).toBe(365);
  });

  it("names the stage's service in every function's metrics", () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME).toBe(SERVICE);
    }
  });

  it('declares an alarm on each of outcome_unknown, unknowns over an hour, signature failures, subscriptions on other terms, the budget fallback, uncounted caller shares, PayHere’s 429s, declines, card testing, possible duplicates, expired pending charges, failed ledger writes and the 5xx rate', () => {
    expect(Object.keys(alarmsOf(template)).sort()).toEqual(
      Object.keys(ALARMS)
        .map((suffix) => `${SERVICE}-${suffix}`)
        .sort(),
    );
  });

  it.each([
    'outcome-unknown',
    'unknown-over-an-hour',
    'notification-signature',
    'notification-terms',
    'budget-fallback',
    'possible-duplicate',
    'pending-expired',
    'ledger-write-failed',
    'refund-undeterminable',
    'caller-shares-uncounted',
    'payhere-429',
  ] as const)('%s fires on the first one, summed over every route of this stage only', (suffix) => {
    const { Properties: alarm } = alarmsOf(template)[`${SERVICE}-${suffix}`]!;

    expect(alarm.Metrics).toHaveLength(1);
    expect(alarm.Metrics[0].Expression).toBe(
      `SELECT SUM(${ALARMS[suffix]}) FROM SCHEMA("${METRICS_NAMESPACE}", route, service) WHERE service = '${SERVICE}'`,
    );
    expect(alarm).toMatchObject({
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Threshold: 1,
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    });
  });

  it("watches the API's own 5xx rate, API Gateway's answers included", () => {
    const { Properties: alarm } = alarmsOf(template)[`${SERVICE}-5xx-rate`]!;
    const api = Object.values(template.Resources).find((r) => r.Type === 'AWS::ApiGateway::RestApi')!;

    expect(alarm).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Statistic: 'Average',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0.05,
    });
    expect(alarm.Dimensions).toEqual([
      { Name: 'ApiName', Value: api.Properties.Name },
      { Name: 'Stage', Value: 'test' },
    ]);
  });

  it('notifies no one unless ALARM_TOPIC_ARN names a topic', () => {
    for (const alarm of Object.values(alarmsOf(template))) {
      expect(actionsOf(template, alarm)).toEqual({ alarm: [], ok: [] });
    }
  });
});

describe('stack traces of a packaged function', () => {
  /** Unpack charge's artifact and load it with no configuration, so its start-up throws. */
  async function crashAtStartUp(nodeFlags: string[], { withoutMap = false } = {}): Promise<string> {
    const dir = path.join(out, withoutMap ? 'unpacked-without-map' : 'unpacked');
    for (const entry of readZip(await readFile(path.join(out, 'charge.zip')))) {
      if (entry.name.endsWith('/') || (withoutMap && entry.name.endsWith('.map'))) continue;
      await mkdir(path.dirname(path.join(dir, entry.name)), { recursive: true });
      await writeFile(path.join(dir, entry.name), entry.data());
    }
    const load = `await import(${JSON.stringify(path.join(dir, 'functions', 'charge.mjs'))})`;
    const failure = await run(process.execPath, [...nodeFlags, '--input-type=module', '-e', load], {
      env: { PATH: process.env.PATH },
    }).then(
      () => undefined,
      (error: { stderr: string }) => error,
    );
    expect(failure, 'the function started without its configuration').toBeDefined();
    return failure!.stderr;
  }

  it('point at the TypeScript sources as the functions run, without --enable-source-maps (lib/log/stack.ts)', async () => {
    const stderr = await crashAtStartUp([]);

    expect(stderr).toMatch(/Missing configuration/);
    expect(stderr).toMatch(/at payHereFromEnvironment \(.*lib\/gateway\/index\.ts:\d+:\d+\)/);
    expect(stderr).toMatch(/functions\/charge\.ts:\d+:\d+/);
    // Node would read and parse the map at every cold start to serve the rare stack that is read.
    const environment = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function')!
      .Properties.Environment.Variables;
    expect(environment.NODE_OPTIONS ?? '').not.toMatch(/--enable-source-maps/);
  });

  it("come from a map of positions without the sources' text, read when a stack first is", async () => {
    const entries = readZip(await readFile(path.join(out, 'charge.zip')));
    const map = JSON.parse(
      entries
        .find((entry) => entry.name.endsWith('.mjs.map'))!
        .data()
        .toString('utf8'),
    ) as {
      sources: string[];
      sourcesContent?: unknown[];
    };

    expect(map.sources.length).toBeGreaterThan(0);
    expect(map.sourcesContent ?? []).toEqual([]);
  });

  it('point only at the minified bundle without the map beside it (what the source map buys)', async () => {
    const stderr = await crashAtStartUp([], { withoutMap: true });

    expect(stderr).toMatch(/charge\.mjs:\d+:\d+/);
    expect(stderr).not.toMatch(/\.ts:\d+/);
  });
});

describe('the API description and the client', () => {
  it('are in no function bundle: no cold start pays for them', async () => {
    const summaries = describedRoutes().map((route) => route.summary);

    for (const zip of (await readdir(out)).filter((file) => file.endsWith('.zip'))) {
      const entries = readZip(await readFile(path.join(out, zip)));
      const map = entries.find((entry) => entry.name.endsWith('.mjs.map'));
      const code = entries
        .find((entry) => entry.name.endsWith('.mjs'))!
        .data()
        .toString('utf8');
      const sources = (JSON.parse(map!.data().toString('utf8')) as { sources: string[] }).sources;

      // Sources are relative to the bundle (../../../lib/http/route.ts); node_modules have folders named client.
      const ours = (folders: string) => new RegExp(`^(\\.\\./)*(${folders})/`);
      expect(
        sources.filter((source) => ours('openapi|client|events').test(source)),
        zip,
      ).toEqual([]);
      expect(sources.filter((source) => ours('lib').test(source)).length, zip).toBeGreaterThan(0);
      expect(
        summaries.filter((summary) => code.includes(summary)),
        zip,
      ).toEqual([]);
    }
  });
});

describe('what a cold start loads', () => {
  it('is no AWS SDK in any function: lib/aws/ speaks to DynamoDB and Secrets Manager itself', async () => {
    for (const zip of (await readdir(out)).filter((file) => file.endsWith('.zip'))) {
      const map = readZip(await readFile(path.join(out, zip))).find((entry) =>
        entry.name.endsWith('.mjs.map'),
      );
      const sources = (JSON.parse(map!.data().toString('utf8')) as { sources: string[] }).sources;

      // AWS's signer alone (lib/aws/sign.ts), in its ES modules: no client's code.
      expect(
        sources.filter(
          (source) => /node_modules\/(@aws-sdk|@smithy)\//.test(source) && !SIGNER_FILES.test(source),
        ),
        zip,
      ).toEqual([]);
      expect(
        sources.filter((source) => source.endsWith('lib/aws/client.ts')),
        zip,
      ).toHaveLength(1);
      expect(
        sources.filter((source) => source.endsWith('lib/aws/secrets-manager.ts')),
        zip,
      ).toHaveLength(
        ACCESS[zip.replace(/\.zip$/, '')]?.secret === false &&
          !ACCESS[zip.replace(/\.zip$/, '')]?.webhooksSecret
          ? 0
          : 1,
      );
    }
  });
});
