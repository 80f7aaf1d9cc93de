import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Pool } from 'undici';
import { loadSharesConfig, shareWrite } from '../lib/budget/caller-shares.ts';
import { SharedStateTable } from '../lib/budget/state-table.ts';
import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type PutItemCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '../lib/dynamodb/index.ts';
import { CAPTURED } from '../lib/gateway/answers.ts';
import { LedgerStore } from '../lib/ledger/store.ts';
import { holdSettled } from '../lib/orders/events.ts';
import { SHARED_READS, SharedReadStore } from '../lib/reads/store.ts';
import { SANDBOX_CREDENTIALS } from '../sandbox/server.ts';
import { type GatewayRouteName, IDEMPOTENT_ROUTES } from '../tests/helpers/routes.ts';
import { OUT, ROOT } from './build.ts';
import { type BenchEnvironment, FLOOR_STATE_TABLE, type Prepared, type UpstreamCall } from './environment.ts';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'bench', 'warm-child.ts');

/** What the warm runner needs: requests prepared ahead, and where the floor sends its own. */
export interface WarmPlan {
  route: GatewayRouteName;
  /** The function's bundle, from the repository's root (the plan names no path of this machine). */
  bundle: string;
  warmUp: number;
  /**
   * `floor`: each request against the bare floor. `observability`: each request against a second
   * copy of the bundle that writes neither metrics nor audit lines (`quiet`).
   */
  mode: WarmMode;
  /** On money routes `minimal` is a third request of its own (a hold can be captured once). */
  requests: Array<{
    ours: Prepared['event'];
    bare?: UpstreamCall;
    minimal?: UpstreamCall;
    quiet?: Prepared['event'];
  }>;
  /** Retry and cancel change a subscription's state: the seeded data is restored before each. */
  resetStateFirst: boolean;
  sandboxUrl: string;
  dynamodbEndpoint: string;
  table: string;
  ledgerTable: string;
  /** Where the handler finds PayHere's shared read answers (lib/reads/). */
  stateTable: string;
}

export type WarmMode = 'floor' | 'observability';

export interface WarmSamples {
  /** The whole handler: our code plus its upstream round trips. */
  handlerMs: number[];
  /** The same upstream work done bare. */
  floorMs: number[];
  /**
   * Money routes only: the PayHere request with the least an idempotency record needs (two small
   * writes) instead of the record this service keeps: what the record's size costs the table.
   */
  minimalMs: number[];
  /** Observability mode: the same handler writing no metrics and no audit line. */
  quietMs: number[];
  statusCodes: number[];
}

/**
 * The two writes lib/idempotency/store.ts sends for a first attempt that gets an answer: the same
 * attributes, conditions and update (tests/unit/bench-floor.test.ts holds the two together).
 */
export function storeWrites(table: string, key: string, attemptId: string) {
  const pk = { S: key };
  const attempt = { S: attemptId };
  return {
    claim: (now: number): PutItemCommandInput => ({
      TableName: table,
      Item: {
        pk,
        state: { S: 'in_progress' },
        fingerprint: { S: 'f'.repeat(64) },
        startedAt: { N: String(now) },
        attempt,
        expiresAt: { N: '253402300799' },
        lockedUntil: { N: String(now + 25_000) },
        // What the settle job would need, were the answer lost (lib/settle/).
        settleQueue: { S: 'money' },
        settleAt: { N: String(now + 625_000) },
        subject: { S: '{"operation":"charge"}' },
      },
      ConditionExpression: 'attribute_not_exists(#key) OR #expiresAt <= :now',
      ExpressionAttributeNames: { '#key': 'pk', '#expiresAt': 'expiresAt' },
      ExpressionAttributeValues: { ':now': { N: String(Math.floor(now / 1000)) } },
    }),
    answer: (now: number, body: string): UpdateItemCommandInput => ({
      TableName: table,
      Key: { pk },
      UpdateExpression:
        'SET #state = :state, #statusCode = :statusCode, #headers = :headers, #body = :body, #expiresAt = :expiresAt ' +
        'REMOVE #lockedUntil, #settleQueue, #settleAt, #subject, #triedAt',
      ConditionExpression: '#attempt = :attempt AND #state = :inProgress',
      ExpressionAttributeNames: {
        '#state': 'state',
        '#attempt': 'attempt',
        '#lockedUntil': 'lockedUntil',
        '#expiresAt': 'expiresAt',
        '#statusCode': 'statusCode',
        '#headers': 'headers',
        '#body': 'body',
        '#settleQueue': 'settleQueue',
        '#settleAt': 'settleAt',
        '#subject': 'subject',
        '#triedAt': 'triedAt',
      },
      ExpressionAttributeValues: {
        ':state': { S: 'complete' },
        ':statusCode': { N: '200' },
        ':headers': { S: '{"Content-Type":"application/json"}' },
        ':body': { S: body },
        ':expiresAt': { N: String(Math.ceil(now / 1000) + 604_800) },
        ':attempt': attempt,
        ':inProgress': { S: 'in_progress' },
      },
    }),
  };
}

/** The order's declined charges this hour (card testing: ORDER_FAILED_ATTEMPTS' default window). */
const withFailed = (now: number, names: Record<string, string>) => ({
  ...names,
  '#failed': `declined${Math.floor(now / 3_600_000)}`,
});

/**
 * The three ledger writes lib/ledger/store.ts sends for a merchant's charge that gets an answer:
 * take the order's payment slot (creating the order), record the outcome, index the payment
 * (tests/unit/bench-floor.test.ts holds them together with the store's).
 */
export function ledgerWrites(table: string, orderId: string, key: string) {
  const Key = { pk: { S: `order#${orderId}` } };
  const names = (...attributes: string[]) => Object.fromEntries(attributes.map((name) => [`#${name}`, name]));
  return {
    claim: (
      now: number,
      price: { items: string; currency: string; amountCents: number },
    ): UpdateItemCommandInput => ({
      TableName: table,
      Key,
      UpdateExpression:
        'SET #inflight = :key, #chargeKey = :key, #chargeSentAt = :sentAt, #chargeUntil = :until, #updatedAt = :now, ' +
        '#chargeQueue = :queue, #chargeDueAt = :dueAt, ' +
        '#state = if_not_exists(#state, :created), #createdAt = if_not_exists(#createdAt, :now), #orderId = :orderId, ' +
        '#owner = if_not_exists(#owner, :owner), #kind = if_not_exists(#kind, :kind), ' +
        '#listed = :listed, #listedAt = if_not_exists(#listedAt, :listedAt), #items = :items, ' +
        '#currency = :currency, #amount = :amount, #custom1 = :custom1, #custom2 = :custom2 REMOVE #nothingAt',
      ConditionExpression:
        'attribute_not_exists(pk) OR (#state IN (:chargeable0, :chargeable1, :chargeable2) AND attribute_not_exists(#inflight) ' +
        'AND (attribute_not_exists(#failed) OR size(#failed) < :failedLimit))',
      ExpressionAttributeNames: withFailed(
        now,
        names(
          'owner',
          'kind',
          'state',
          'items',
          'currency',
          'amount',
          'custom1',
          'custom2',
          'inflight',
          'chargeKey',
          'chargeSentAt',
          'chargeUntil',
          'chargeQueue',
          'chargeDueAt',
          'nothingAt',
          'createdAt',
          'updatedAt',
          'orderId',
          'listed',
          'listedAt',
        ),
      ),
      ExpressionAttributeValues: {
        ':key': { S: key },
        ':failedLimit': { N: '3' },
        ':orderId': { S: orderId },
        ':sentAt': { N: String(now) },
        ':until': { N: String(now + 16_000) },
        ':now': { N: String(now) },
        ':owner': { S: 'bench' },
        ':items': { S: price.items },
        ':currency': { S: price.currency },
        ':amount': { N: String(price.amountCents) },
        ':created': { S: 'created' },
        ':queue': { S: 'charge' },
        ':dueAt': { N: String(now + 16_000) },
        ':chargeable0': { S: 'created' },
        ':chargeable1': { S: 'failed' },
        ':chargeable2': { S: 'cancelled' },
        ':custom1': { NULL: true },
        ':custom2': { NULL: true },
        ':kind': { S: 'charge' },
        ':listed': { S: 'order' },
        ':listedAt': { S: `${String(now).padStart(15, '0')}#${orderId}` },
      },
      ReturnValues: 'ALL_NEW',
    }),
    outcome: (now: number, paymentId: string): UpdateItemCommandInput => ({
      TableName: table,
      Key,
      UpdateExpression:
        'SET #state = :state, #updatedAt = :now, #paymentId = :paymentId REMOVE #inflight, #chargeQueue, ' +
        '#chargeDueAt, #reportedAt, #reportedPaymentId, #reportedSubscriptionId, #reportedNextInstallment, #settleQueue, ' +
        '#settleAt',
      ConditionExpression: '#chargeKey = :key AND #state IN (:from0, :from1, :from2, :from3, :from4, :from5)',
      ExpressionAttributeNames: names(
        'state',
        'inflight',
        'chargeKey',
        'chargeQueue',
        'chargeDueAt',
        'updatedAt',
        'paymentId',
        'reportedPaymentId',
        'reportedSubscriptionId',
        'reportedNextInstallment',
        'reportedAt',
        'settleQueue',
        'settleAt',
      ),
      ExpressionAttributeValues: {
        ':key': { S: key },
        ':state': { S: 'succeeded' },
        ':now': { N: String(now) },
        ':from0': { S: 'created' },
        ':from1': { S: 'failed' },
        ':from2': { S: 'cancelled' },
        ':from3': { S: 'pending' },
        ':from4': { S: 'unknown' },
        ':from5': { S: 'succeeded' },
        ':paymentId': { S: paymentId },
      },
    }),
    payment: (paymentId: string): PutItemCommandInput => ({
      TableName: table,
      Item: {
        pk: { S: `payment#${paymentId}` },
        orderId: { S: orderId },
        owner: { S: 'bench' },
        chargeKey: { S: key },
      },
      ConditionExpression: 'attribute_not_exists(pk) OR (#orderId = :orderId AND #chargeKey = :chargeKey)',
      ExpressionAttributeNames: names('chargeKey', 'orderId'),
      ExpressionAttributeValues: { ':orderId': { S: orderId }, ':chargeKey': { S: key } },
    }),
  };
}

/** How the floor writes an idempotency record on money routes. */
export type FloorWrites = 'same' | 'minimal';

/**
 * What the least code could do for the same request: one bare undici request to the same sandbox
 * endpoint with a cached token, plus, on money routes, two writes on the same table. With
 * `same`, those are the writes lib/idempotency/store.ts sends for a first attempt (storeWrites),
 * so the table's own time is on both sides and the difference is our code. With `minimal`, they are the least a record needs
 * (claim a key, store a status), which shows what the record's contents cost the table.
 */
export function bareFloor(
  plan: Pick<WarmPlan, 'sandboxUrl' | 'dynamodbEndpoint' | 'table' | 'ledgerTable' | 'stateTable'>,
) {
  const pool = new Pool(plan.sandboxUrl, { connections: 4 });
  const dynamodb = new DynamoDBClient({ endpoint: plan.dynamodbEndpoint, region: 'ap-south-1' });
  let token: Promise<string> | undefined;
  /**
   * PayHere's budget is shared through a DynamoDB item (lib/budget/): every call to PayHere takes a
   * slot with one conditional write and, once answered, frees it with another. The floor sends the
   * same two writes through the same table code, on an item of its own of the same size (one attribute per
   * slot, every slot used in turn), so the table's time is on both sides and the difference is
   * the limiter's own work.
   */
  const budget = new SharedStateTable({ client: dynamodb, table: FLOOR_STATE_TABLE, timeoutMs: 500 });
  const slots = Number(process.env.GATEWAY_RATE_LIMIT?.split('/')[0]);
  let nextSlot = 0;

  async function withSlot<T>(call: () => Promise<T>): Promise<T> {
    const slot = nextSlot++ % slots;
    const now = Date.now();
    const busyUntil = now + 25_000;
    if (!(await budget.takeSlot(slot, busyUntil, now, now, `floor-${slot}-${now}`)).taken)
      throw new Error(`floor: budget slot ${slot} busy`);
    const result = await call();
    // Freed after the answer, off its path, as lib/gateway/client.ts frees it.
    void budget.releaseSlot(slot, busyUntil, Date.now());
    return result;
  }

  async function accessToken(): Promise<string> {
    const basic = Buffer.from(`${SANDBOX_CREDENTIALS.appId}:${SANDBOX_CREDENTIALS.appSecret}`).toString(
      'base64',
    );
    const response = await pool.request({
      method: 'POST',
      path: '/merchant/v1/oauth/token',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    return ((await response.body.json()) as { access_token: string }).access_token;
  }

  async function minimalWrites(exchange: () => Promise<string>): Promise<void> {
    const pk = { S: `bench#${crypto.randomUUID()}` };
    await dynamodb.send(
      new PutItemCommand({
        TableName: plan.table,
        Item: { pk, state: { S: 'in_progress' } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    await exchange();
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: plan.table,
        Key: { pk },
        UpdateExpression: 'SET #s = :s, #r = :r',
        ExpressionAttributeNames: { '#s': 'state', '#r': 'response' },
        ExpressionAttributeValues: { ':s': { S: 'complete' }, ':r': { S: '{"statusCode":200}' } },
      }),
    );
  }

  /** Claim the key as the store does, `exchange`, then store its answer as the store does. */
  async function sameWrites(exchange: () => Promise<string>): Promise<void> {
    const writes = storeWrites(plan.table, `bench#${crypto.randomUUID()}`, crypto.randomUUID());
    await dynamodb.send(new PutItemCommand(writes.claim(Date.now())));
    const body = await exchange();
    await dynamodb.send(new UpdateItemCommand(writes.answer(Date.now(), body)));
  }

  /** A charge's upstream call between the ledger's writes, as lib/orders/charge-engine.ts sends them. */
  async function withLedger(call: UpstreamCall, exchange: () => Promise<string>): Promise<string> {
    const charge = JSON.parse(call.body!) as {
      order_id: string;
      items: string;
      currency: string;
      amount: number;
    };
    const writes = ledgerWrites(plan.ledgerTable, charge.order_id, `bench#${crypto.randomUUID()}`);
    const price = {
      items: charge.items,
      currency: charge.currency,
      amountCents: Math.round(charge.amount * 100),
    };
    await dynamodb.send(new UpdateItemCommand(writes.claim(Date.now(), price)));
    const body = await exchange();
    const paymentId = String((JSON.parse(body) as { data: { payment_id: number } }).data.payment_id);
    // Sent together, as lib/orders/charge-engine.ts sends them: they are independent items.
    await Promise.all([
      dynamodb.send(new UpdateItemCommand(writes.outcome(Date.now(), paymentId))),
      dynamodb.send(new PutItemCommand(writes.payment(paymentId))),
    ]);
    return body;
  }

  const ledger = new LedgerStore({ client: dynamodb, table: plan.ledgerTable });
  const withRefundLedger = (call: UpstreamCall, exchange: () => Promise<string>) =>
    refundBookkeeping(ledger, call.body, exchange);

  /**
   * Each caller's share (lib/budget/caller-shares.ts): before its slot, every PayHere call of a
   * caller (the bench calls as the merchant) counts against the caller's share with one conditional
   * write; the floor sends that very write (shareWrite), on a caller of its own.
   */
  const share = loadSharesConfig(process.env).merchant;
  const shareCaller = { id: `bench-floor-${crypto.randomUUID()}`, kind: 'merchant' } as const;
  async function counted(money: boolean): Promise<void> {
    await dynamodb.send(
      new UpdateItemCommand(shareWrite(plan.stateTable, shareCaller, share, money, Date.now())),
    );
  }

  async function exchange(call: UpstreamCall): Promise<string> {
    token ??= accessToken();
    const authorization = `Bearer ${await token}`;
    await counted(call.method === 'POST');
    return withSlot(async () => {
      const response = await pool.request({
        method: call.method,
        path: call.path,
        headers: {
          authorization,
          ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: call.body ?? null,
      });
      return response.body.text();
    });
  }

  /**
   * After a money call, the service drops the shared answers it changed (lib/reads/invalidation.ts)
   * before it answers: the floor writes the same tombstones through the same store, the order's
   * payments after a charge, capture or refund, a subscription's three items after a retry or cancel.
   */
  const reads = new SharedReadStore({ client: dynamodb, table: plan.stateTable, timeoutMs: 500 });
  function dropsAfter(route: GatewayRouteName, call: UpstreamCall): Promise<void> {
    const body = call.body === undefined ? {} : (JSON.parse(call.body) as Record<string, unknown>);
    if ('subscription_id' in body) return reads.forgetSubscription(String(body.subscription_id));
    return reads.forgetOrder(typeof body.order_id === 'string' ? body.order_id : `bench-${route}-order`);
  }

  /** A warm read's upstream work: its shared answers looked up in the state table, as lib/reads/store.ts reads them. */
  async function sharedLookups(keys: string[]): Promise<void> {
    await Promise.all(
      keys.map((key) =>
        dynamodb.send(
          new GetItemCommand({ TableName: plan.stateTable, Key: { pk: { S: key } }, ConsistentRead: true }),
        ),
      ),
    );
  }

  return {
    async send(route: GatewayRouteName, call: UpstreamCall, writes: FloorWrites = 'same'): Promise<void> {
      if (call.shared) return sharedLookups(call.shared);
      // A cancel first reads, at once, the subscription's ledger reference and its shared answers
      // (lib/orders/subscriptions.ts): an ended subscription costs PayHere nothing.
      if (route === 'cancelSubscription') {
        const id = String((JSON.parse(call.body!) as { subscription_id: number }).subscription_id);
        await Promise.all([
          dynamodb.send(
            new GetItemCommand({
              TableName: plan.ledgerTable,
              Key: { pk: { S: `subscription#${id}` } },
              ConsistentRead: true,
            }),
          ),
          sharedLookups([SHARED_READS.subscription(id).key, SHARED_READS.subscriptions.key]),
        ]);
      }
      // The merchant's charge also takes and settles its order in the ledger, and a refund its
      // payment's refund slot (the bench calls as the merchant).
      const upstream = async () => {
        const body =
          route === 'charge'
            ? await withLedger(call, () => exchange(call))
            : route === 'refund'
              ? await withRefundLedger(call, () => exchange(call))
              : await exchange(call);
        // A capture proves its hold in the ledger beside dropping the shared answers.
        await Promise.all([
          dropsAfter(route, call),
          route === 'capture' ? captureBookkeeping(ledger, call.body, body) : undefined,
        ]);
        return body;
      };
      if (!IDEMPOTENT_ROUTES.includes(route)) await upstream();
      else if (writes === 'same') await sameWrites(upstream);
      else await minimalWrites(upstream);
    },
    resetState: async () => {
      const response = await pool.request({ method: 'POST', path: '/__sandbox/reset-state' });
      await response.body.text();
    },
    close: () => pool.close(),
  };
}

/**
 * What a capture PayHere accepted asks of the ledger, as lib/orders/captures.ts asks it through
 * lib/orders/holds.ts: its hold's order proven, with the hold's first outcome and its event, in one
 * conditional write (or two: the second proves only the token, where the first found the outcome
 * recorded or no such order). Sent beside the drop of the order's shared answers.
 * tests/bench/capture-floor.test.ts holds it to the route's.
 */
export async function captureBookkeeping(
  ledger: LedgerStore,
  requestBody: string | undefined,
  answerBody: string,
): Promise<void> {
  const capture = JSON.parse(requestBody ?? '{}') as { authorization_token?: string; amount?: number };
  const { data } = JSON.parse(answerBody) as { data?: { order_id?: unknown; status_code?: unknown } };
  // As the route: only a capture PayHere made proves its hold.
  if (Number(data?.status_code) !== CAPTURED) return;
  const orderId = data?.order_id;
  if (typeof orderId !== 'string' || capture.authorization_token === undefined) return;
  await ledger.proveHold(orderId, capture.authorization_token, {
    action: 'captured',
    events: [holdSettled(orderId, 'captured', capture.amount ?? null)],
  });
}

/**
 * A merchant's refund of a payment between the ledger's refund bookkeeping, the same requests
 * lib/orders/refunds.ts sends, through the ledger's own store (lib/ledger/), without events: the
 * payment's refund slot taken (one refund in flight), what is left read (its reference, then its
 * order and its refund item, at once), the refund sent, its outcome recorded, then its order looked
 * up again and its kept payments dropped (tests/bench/refund-floor.test.ts holds it to the route's).
 */
export async function refundBookkeeping(
  ledger: LedgerStore,
  requestBody: string | undefined,
  exchange: () => Promise<string>,
): Promise<string> {
  const refund = JSON.parse(requestBody ?? '{}') as { payment_id?: number | string; amount?: number };
  if (refund.payment_id === undefined) return exchange();
  const paymentId = String(refund.payment_id);
  const key = `bench#${crypto.randomUUID()}`;
  const amountCents = refund.amount === undefined ? null : Math.round(refund.amount * 100);
  await ledger.takeRefundSlot(paymentId, { key, takenAt: Date.now(), amountCents, by: 'bench' });
  const orderId = (await ledger.lookup('payment', paymentId))?.orderId;
  await Promise.all([
    orderId === undefined ? undefined : ledger.getOrder(orderId),
    ledger.paymentRefunds(paymentId),
  ]);
  const body = await exchange();
  const refundId = (JSON.parse(body) as { data?: { refund_id?: number } }).data?.refund_id ?? null;
  await ledger.finishRefund(paymentId, key, { accepted: { amountCents, refundId } });
  const order = (await ledger.lookup('payment', paymentId))?.orderId;
  if (order !== undefined) await ledger.dropPayments(order);
  return body;
}

/**
 * Prepare `warmUp + count` requests for `route` (fresh orders, holds to capture...), then run them
 * in a process of their own holding only the function's bundle: the sandbox and DynamoDB stay in
 * this one, so their work and garbage never land in the handler's timings.
 */
export async function measureWarm(
  route: GatewayRouteName,
  bundle: string,
  environment: BenchEnvironment,
  count: number,
  warmUp: number,
  mode: WarmMode = 'floor',
): Promise<WarmSamples> {
  const requests: WarmPlan['requests'] = [];
  for (let i = 0; i < warmUp + count; i++) {
    const ours = (await environment.prepare(route)).event;
    if (mode === 'observability') {
      requests.push({ ours, quiet: (await environment.prepare(route)).event });
      continue;
    }
    requests.push({
      ours,
      bare: (await environment.prepare(route)).upstream,
      ...(IDEMPOTENT_ROUTES.includes(route) ? { minimal: (await environment.prepare(route)).upstream } : {}),
    });
  }
  const plan: WarmPlan = {
    route,
    mode,
    bundle: path.relative(ROOT, bundle),
    warmUp,
    requests,
    resetStateFirst: route === 'retrySubscription' || route === 'cancelSubscription',
    sandboxUrl: environment.sandbox.url,
    dynamodbEndpoint: environment.dynamodb.endpoint,
    table: environment.env.IDEMPOTENCY_TABLE!,
    ledgerTable: environment.env.LEDGER_TABLE!,
    stateTable: environment.env.STATE_TABLE!,
  };
  const planFile = path.join(OUT, `warm-${route}-${mode}.json`);
  await writeFile(planFile, JSON.stringify(plan));
  try {
    const { stdout } = await run(process.execPath, [CHILD, planFile], {
      env: { ...process.env, ...environment.env },
      // Every request writes its metrics (and, in observability mode, its audit line) to stdout.
      maxBuffer: 256 * 1024 * 1024,
      timeout: 300_000,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as WarmSamples;
  } finally {
    // The plan holds this run's loopback ports: it is for this run alone.
    await rm(planFile, { force: true });
  }
}
