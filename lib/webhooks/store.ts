import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  type Item,
  QueryCommand,
  sendConditional,
  UpdateItemCommand,
} from '../dynamodb/index.ts';

/**
 * The webhooks' part of the events table (docs/operator.md "Webhooks"): each event item's
 * `deliveries` (one per endpoint), its place in the sparse `due` index (`dueQueue`, `dueAt`: the
 * earliest pending delivery's `nextAt`), the lease a deliverer holds while it posts it
 * (`leaseUntil`, `leaseOwner`), and each endpoint's failing streak (`endpoint#<id>`). The event
 * items themselves are the relay's (lib/events/); this store writes only these attributes, each
 * write conditional. It persists; the deliverer decides.
 */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'disabled';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'failed', 'disabled'];

export interface Delivery {
  status: DeliveryStatus;
  /** Attempts made. */
  attempts: number;
  /** When the next attempt is due (pending only). */
  nextAt?: number;
  /** The receiver's HTTP status at the last attempt, when it answered. */
  lastStatus?: number;
  lastError?: string;
  lastAttemptAt?: number;
  deliveredAt?: number;
}

export interface WebhookEvent {
  pk: string;
  id: string;
  type: string;
  objectType: string;
  objectId: string;
  body: string;
  publishedAt: number;
  /** Its place in the feed (`<publishedAt, 13 digits>#<id>`). */
  feedKey: string;
  deliveries: Record<string, Delivery>;
}

/** An endpoint's failing streak: since its first failure no attempt succeeded. */
export interface EndpointState {
  failingSince?: number;
  disabledAt?: number;
}

export const DUE_QUEUE = 'deliveries';
const FEED = 'events';
export const eventKey = (id: string) => `event#${id}`;
const endpointKey = (id: string) => `endpoint#${id}`;

const num = (value: AttributeValue | undefined): number | undefined =>
  value?.N === undefined ? undefined : Number(value.N);

function deliveryOf(value: AttributeValue): Delivery {
  const fields = value.M ?? {};
  const delivery: Delivery = {
    status: (fields.status?.S ?? 'pending') as DeliveryStatus,
    attempts: num(fields.attempts) ?? 0,
  };
  const optional = {
    nextAt: num(fields.nextAt),
    lastStatus: num(fields.lastStatus),
    lastError: fields.lastError?.S,
    lastAttemptAt: num(fields.lastAttemptAt),
    deliveredAt: num(fields.deliveredAt),
  };
  for (const [name, field] of Object.entries(optional))
    if (field !== undefined) Object.assign(delivery, { [name]: field });
  return delivery;
}

export function deliveryAttribute(delivery: Delivery): AttributeValue {
  const fields: Record<string, AttributeValue> = {
    status: { S: delivery.status },
    attempts: { N: String(delivery.attempts) },
  };
  if (delivery.nextAt !== undefined) fields.nextAt = { N: String(delivery.nextAt) };
  if (delivery.lastStatus !== undefined) fields.lastStatus = { N: String(delivery.lastStatus) };
  if (delivery.lastError !== undefined) fields.lastError = { S: delivery.lastError };
  if (delivery.lastAttemptAt !== undefined) fields.lastAttemptAt = { N: String(delivery.lastAttemptAt) };
  if (delivery.deliveredAt !== undefined) fields.deliveredAt = { N: String(delivery.deliveredAt) };
  return { M: fields };
}

export function eventOf(item: Item): WebhookEvent {
  return {
    pk: item.pk?.S ?? '',
    id: item.id?.S ?? '',
    type: item.type?.S ?? '',
    objectType: item.objectType?.S ?? '',
    objectId: item.objectId?.S ?? '',
    body: item.body?.S ?? '',
    publishedAt: num(item.publishedAt) ?? 0,
    feedKey: item.feedKey?.S ?? '',
    deliveries: Object.fromEntries(
      Object.entries(item.deliveries?.M ?? {}).map(([endpoint, value]) => [endpoint, deliveryOf(value)]),
    ),
  };
}

/** When the event is next due: its earliest pending delivery's, or undefined when none is pending. */
export function dueAtOf(deliveries: Record<string, Delivery>): number | undefined {
  const pending = Object.values(deliveries)
    .filter((delivery) => delivery.status === 'pending')
    .map((delivery) => delivery.nextAt ?? 0);
  return pending.length === 0 ? undefined : Math.min(...pending);
}

export interface WebhookStoreOptions {
  client: Pick<DynamoDBClient, 'send'>;
  table: string;
}

export interface DeliveryPage {
  events: WebhookEvent[];
  /** The feed position to go on after, when there may be more. */
  after?: string;
}

export class WebhookStore {
  readonly #client: Pick<DynamoDBClient, 'send'>;
  readonly #table: string;

  constructor(options: WebhookStoreOptions) {
    this.#client = options.client;
    this.#table = options.table;
  }

  /** A page of the keys of events due at `now`, earliest first; `after` goes on from the last page. */
  async due(now: number, limit: number, after?: Item): Promise<{ keys: string[]; after?: Item }> {
    const answer = await this.#client.send(
      new QueryCommand({
        TableName: this.#table,
        IndexName: 'due',
        KeyConditionExpression: 'dueQueue = :queue AND dueAt <= :now',
        ExpressionAttributeValues: { ':queue': { S: DUE_QUEUE }, ':now': { N: String(now) } },
        Limit: limit,
        ...(after ? { ExclusiveStartKey: after } : {}),
      }),
    );
    return {
      keys: (answer.Items ?? []).map((item) => item.pk?.S ?? '').filter((pk) => pk !== ''),
      ...(answer.LastEvaluatedKey ? { after: answer.LastEvaluatedKey } : {}),
    };
  }

  /**
   * Take the event under a lease until `until`, if it is due at `now` and no other deliverer holds
   * a live lease (a lease of `owner`'s own is taken again: its write's answer may have been lost).
   * Answers the event, or undefined when it is not due or leased.
   */
  async claim(pk: string, owner: string, now: number, until: number): Promise<WebhookEvent | undefined> {
    const answer = await sendConditional(
      this.#client,
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: pk } },
        UpdateExpression: 'SET leaseUntil = :until, leaseOwner = :owner',
        ConditionExpression:
          'attribute_exists(pk) AND dueAt <= :now AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now OR leaseOwner = :owner)',
        ExpressionAttributeValues: {
          ':until': { N: String(until) },
          ':owner': { S: owner },
          ':now': { N: String(now) },
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return answer?.Attributes ? eventOf(answer.Attributes) : undefined;
  }

  /**
   * Write the deliveries attempted under `owner`'s lease and release it; the event leaves the `due`
   * index when nothing is pending. Every value is absolute, so a repeat of a write whose answer was
   * lost writes the same. False when the lease is no longer `owner`'s (another deliverer took the
   * event after the lease ran out, and delivers it again).
   */
  async release(
    pk: string,
    owner: string,
    changed: Record<string, Delivery>,
    dueAt: number | undefined,
  ): Promise<boolean> {
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = { ':owner': { S: owner } };
    const sets: string[] = [];
    Object.entries(changed).forEach(([endpoint, delivery], index) => {
      names[`#e${index}`] = endpoint;
      values[`:d${index}`] = deliveryAttribute(delivery);
      sets.push(`deliveries.#e${index} = :d${index}`);
    });
    const removes = ['leaseUntil'];
    if (dueAt === undefined) removes.push('dueAt', 'dueQueue');
    else {
      sets.push('dueAt = :due', 'dueQueue = :queue');
      values[':due'] = { N: String(dueAt) };
      values[':queue'] = { S: DUE_QUEUE };
    }
    const answer = await sendConditional(
      this.#client,
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: pk } },
        UpdateExpression: `${sets.length > 0 ? `SET ${sets.join(', ')} ` : ''}REMOVE ${removes.join(', ')}`,
        ConditionExpression: 'leaseOwner = :owner',
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      }),
    );
    return answer !== undefined;
  }

  /** One event, read consistently. */
  async event(
    id: string,
  ): Promise<(WebhookEvent & { leaseUntil?: number; hasDeliveries: boolean }) | undefined> {
    const answer = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: { pk: { S: eventKey(id) } }, ConsistentRead: true }),
    );
    if (!answer.Item) return undefined;
    const leaseUntil = num(answer.Item.leaseUntil);
    return {
      ...eventOf(answer.Item),
      hasDeliveries: answer.Item.deliveries?.M !== undefined,
      ...(leaseUntil === undefined ? {} : { leaseUntil }),
    };
  }

  /**
   * Make the event's deliveries to `endpoints` pending and due at `now`, their attempts kept (an
   * endpoint the event has no delivery for gets a new one). Only while no deliverer holds a live
   * lease on it: its result would overwrite this. False then.
   */
  async redeliver(
    id: string,
    endpoints: { known: string[]; added: string[] },
    now: number,
    wholeMap: boolean,
  ): Promise<boolean> {
    const names: Record<string, string> = { '#status': 'status', '#next': 'nextAt' };
    const values: Record<string, AttributeValue> = {
      ':pending': { S: 'pending' },
      ':now': { N: String(now) },
      ':queue': { S: DUE_QUEUE },
    };
    const sets = ['dueAt = :now', 'dueQueue = :queue'];
    const conditions = ['attribute_exists(pk)', '(attribute_not_exists(leaseUntil) OR leaseUntil < :now)'];
    const fresh = (): AttributeValue => deliveryAttribute({ status: 'pending', attempts: 0, nextAt: now });
    if (wholeMap) {
      values[':map'] = { M: Object.fromEntries(endpoints.added.map((endpoint) => [endpoint, fresh()])) };
      sets.push('deliveries = :map');
      conditions.push('attribute_not_exists(deliveries)');
    } else {
      endpoints.known.forEach((endpoint, index) => {
        names[`#k${index}`] = endpoint;
        sets.push(`deliveries.#k${index}.#status = :pending`, `deliveries.#k${index}.#next = :now`);
        conditions.push(`attribute_exists(deliveries.#k${index})`);
      });
      endpoints.added.forEach((endpoint, index) => {
        names[`#a${index}`] = endpoint;
        values[`:a${index}`] = fresh();
        sets.push(`deliveries.#a${index} = :a${index}`);
      });
    }
    const answer = await sendConditional(
      this.#client,
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: eventKey(id) } },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return answer !== undefined;
  }

  /** Events with deliveries, newest published first, from the feed index, after `after`. */
  async newest(limit: number, after?: string): Promise<DeliveryPage> {
    const answer = await this.#client.send(
      new QueryCommand({
        TableName: this.#table,
        IndexName: 'feed',
        KeyConditionExpression: after ? 'feed = :feed AND feedKey < :after' : 'feed = :feed',
        FilterExpression: 'attribute_exists(deliveries)',
        ExpressionAttributeValues: {
          ':feed': { S: FEED },
          ...(after ? { ':after': { S: after } } : {}),
        },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    const last = answer.LastEvaluatedKey?.feedKey?.S;
    return {
      events: (answer.Items ?? []).map(eventOf),
      ...(last ? { after: last } : {}),
    };
  }

  /** The endpoint's failing streak, read consistently. */
  async endpoint(id: string): Promise<EndpointState> {
    const answer = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { pk: { S: endpointKey(id) } },
        ConsistentRead: true,
      }),
    );
    return stateOf(answer.Item);
  }

  /**
   * A failed attempt: the streak begins now unless it already had; answers the streak. A streak
   * whose last failure came before `staleBefore` is over (nothing was tried since, let alone failed):
   * this failure begins a new one.
   */
  async failed(id: string, now: number, error: string, staleBefore: number): Promise<EndpointState> {
    const values = { ':now': { N: String(now) }, ':error': { S: error } };
    const anew = await sendConditional(
      this.#client,
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: endpointKey(id) } },
        UpdateExpression: 'SET failingSince = :now, lastFailureAt = :now, lastError = :error',
        ConditionExpression: 'attribute_not_exists(lastFailureAt) OR lastFailureAt < :staleBefore',
        ExpressionAttributeValues: { ...values, ':staleBefore': { N: String(staleBefore) } },
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (anew) return stateOf(anew.Attributes);
    // The streak goes on (a retry of the write above, applied with its answer lost, lands here too).
    const answer = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: endpointKey(id) } },
        UpdateExpression:
          'SET failingSince = if_not_exists(failingSince, :now), lastFailureAt = :now, lastError = :error',
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return stateOf(answer.Attributes);
  }

  /** A delivered attempt ends the streak. */
  async succeeded(id: string): Promise<void> {
    await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: endpointKey(id) } },
        UpdateExpression: 'REMOVE failingSince',
      }),
    );
  }

  /** Disable the endpoint if it has been failing since `cutoff` or earlier; true for the one write that did. */
  async disable(id: string, now: number, cutoff: number): Promise<boolean> {
    const answer = await sendConditional(
      this.#client,
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: endpointKey(id) } },
        UpdateExpression: 'SET disabledAt = :now',
        ConditionExpression: 'attribute_not_exists(disabledAt) AND failingSince <= :cutoff',
        ExpressionAttributeValues: { ':now': { N: String(now) }, ':cutoff': { N: String(cutoff) } },
      }),
    );
    return answer !== undefined;
  }

  /** Enable a disabled endpoint again, its streak forgotten (a redelivery asks for it). */
  async enable(id: string): Promise<void> {
    await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: endpointKey(id) } },
        UpdateExpression: 'REMOVE disabledAt, failingSince',
      }),
    );
  }
}

function stateOf(item: Item | undefined): EndpointState {
  const failingSince = num(item?.failingSince);
  const disabledAt = num(item?.disabledAt);
  return {
    ...(failingSince === undefined ? {} : { failingSince }),
    ...(disabledAt === undefined ? {} : { disabledAt }),
  };
}
