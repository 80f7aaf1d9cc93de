import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it, onTestFinished, vi } from 'vitest';
import {
  type CallerShareContext,
  CallerShares,
  callers,
  loadSharesConfig,
} from '../../lib/budget/caller-shares.ts';
import type { BudgetSnapshot, SharedStateTable } from '../../lib/budget/state-table.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { ScanCommand } from '../../lib/dynamodb/index.ts';
import { CallerRateLimitedError } from '../../lib/envelope/errors.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { SharedReads } from '../../lib/reads/shared-reads.ts';
import { SharedReadStore } from '../../lib/reads/store.ts';
import { SubscriptionPages } from '../../lib/reads/subscription-pages.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { dynamoDbAt, freshStateTable } from '../helpers/state-table.ts';
import { chargeBody, newOrderId } from '../resilience/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * A read whose shared answer this container has not seen takes its caller's share and a slot of
 * PayHere's budget beside its lookup (GatewayClient.reserve): one DynamoDB round trip before its
 * PayHere call instead of three. What it took goes back when it is not used: the slot as it was
 * before, the share's count.
 */
const sandbox = useTestGateway();
const alice: CallerShareContext = { id: 'alice', kind: 'customer' };
const deadline = () => Date.now() + 5_000;

/** A container: its PayHere client and shared reads, on one state table that containers share. */
function container(table: SharedStateTable, name: string, shares: CallerShares) {
  const payhere = createPayHere(loadConfig(process.env), { sharedState: table, shares });
  const store = new SharedReadStore({
    client: dynamoDbAt(inject('dynamodbEndpoint')),
    table: name,
    timeoutMs: 2_000,
  });
  return { payhere, store, reads: new SharedReads({ payhere, store }) };
}

async function setUp(customerCalls = '100/10000', customerCap = '') {
  const { table, name } = await freshStateTable();
  const shares = new CallerShares({
    client: dynamoDbAt(inject('dynamodbEndpoint')),
    table: name,
    timeoutMs: 2_000,
    config: loadSharesConfig({ CALLER_RATE_LIMIT: customerCalls, CALLER_RATE_CAP: customerCap }),
  });
  // A token in the table, as another container left it: the reads below make no token request.
  await createPayHere(loadConfig(process.env), { sharedState: table }).listSubscriptions(deadline());
  await backgroundSettled();
  return { table, name, shares };
}

/** Every caller's counted calls in `name`, as the table holds them. */
/**
 * The budget's slots, pause and marks: not which take last named a slot, nor when a live call last
 * took one (the read did, for a moment: live calls are about), which are bookkeeping.
 */
function slotsOf({ takenBy: _takenBy, liveAt: _liveAt, ...budget }: BudgetSnapshot) {
  return budget;
}

async function shareCounts(name: string): Promise<number> {
  const { Items = [] } = await dynamoDbAt(inject('dynamodbEndpoint')).send(
    new ScanCommand({ TableName: name }),
  );
  let total = 0;
  for (const item of Items) {
    if (!item.pk?.S?.startsWith('share#')) continue;
    for (const [attribute, value] of Object.entries(item))
      if (/^c\d+$/.test(attribute)) total += Number(value.N);
  }
  return total;
}

async function paidOrder(): Promise<string> {
  const orderId = newOrderId();
  await apiClient(sandbox, await accessToken(sandbox)).post('payment/charge', chargeBody(orderId));
  return orderId;
}

describe('a read whose answer this container has not seen', () => {
  it('takes its slot while its lookup is still on its way, and uses it for the call', async () => {
    // Prepare: a lookup that takes 150 ms.
    const { table, name, shares } = await setUp();
    const { store, reads } = container(table, name, shares);
    const orderId = await paidOrder();
    const get = store.get.bind(store);
    let lookedUpAt = 0;
    vi.spyOn(store, 'get').mockImplementation(async (...args) => {
      await sleep(150);
      lookedUpAt = performance.now();
      return get(...args);
    });
    const takeSlot = table.takeSlot.bind(table);
    const slotsAt: number[] = [];
    vi.spyOn(table, 'takeSlot').mockImplementation((...args) => {
      slotsAt.push(performance.now());
      return takeSlot(...args);
    });
    sandbox.resetCounters();

    // Act
    const read = await callers.run(alice, () => reads.paymentsOfOrder(orderId, deadline()));

    // Assess: one slot, taken before the lookup answered; one search; one call counted.
    expect(read.shared).toBe(false);
    expect(slotsAt).toHaveLength(1);
    expect(slotsAt[0]!).toBeLessThan(lookedUpAt);
    expect(sandbox.counters().search).toBe(1);
    expect(await shareCounts(name)).toBe(1);
  });

  it('gives the slot and the share back when the lookup finds the answer another container shared', async () => {
    // Prepare: another container read the order, and its answer is in the table.
    const { table, name, shares } = await setUp();
    const orderId = await paidOrder();
    await callers.run(alice, () => container(table, name, shares).reads.paymentsOfOrder(orderId, deadline()));
    await backgroundSettled();
    const budgetBefore = await table.readBudget();
    const sharesBefore = await shareCounts(name);
    sandbox.resetCounters();

    // Act: a container that never saw it reads it.
    const { reads } = container(table, name, shares);
    const read = await callers.run(alice, () => reads.paymentsOfOrder(orderId, deadline()));
    await backgroundSettled();

    // Assess: served from the table; the budget and the caller's count as they were.
    expect(read.shared).toBe(true);
    expect(sandbox.counters().search ?? 0).toBe(0);
    expect(slotsOf(await table.readBudget())).toEqual(slotsOf(budgetBefore));
    expect(await shareCounts(name)).toBe(sharesBefore);
  });

  it('stops waiting for a slot when the lookup finds the answer: it takes none', async () => {
    // Prepare: PayHere's budget as deployed (20 per 10 s, this file's is 10,000 a second); the
    // answer is in the table, and every slot of the budget is busy for 1.5 s more.
    vi.stubEnv('GATEWAY_RATE_LIMIT', '20/10000');
    onTestFinished(() => {
      vi.unstubAllEnvs();
    });
    const { table, name, shares } = await setUp();
    const orderId = await paidOrder();
    await callers.run(alice, () => container(table, name, shares).reads.paymentsOfOrder(orderId, deadline()));
    await backgroundSettled();
    const freeIn = Date.now() - 10_500 + 1_500;
    for (let slot = 0; slot < 20; slot++)
      await table.takeSlot(slot, freeIn, Number.MAX_SAFE_INTEGER, Date.now(), `other${slot}`);
    const takes = vi.spyOn(table, 'takeSlot');

    // Act: a container that never saw the answer reads it; its reservation waits for a slot.
    const { reads } = container(table, name, shares);
    const read = await callers.run(alice, () => reads.paymentsOfOrder(orderId, deadline()));
    await backgroundSettled();

    // Assess: served from the table; no slot taken, once the slots freed or not.
    expect(read.shared).toBe(true);
    const taken = await Promise.all(takes.mock.results.map((result) => result.value));
    expect(taken.filter((take) => take.taken)).toEqual([]);
  });

  it('gives the slot back when its caller is refused, and then checks that caller’s share alone', async () => {
    // Prepare: a customer allowed one PayHere call per 10 s and no spare one, which it used.
    const { table, name, shares } = await setUp('1/10000', '1');
    const { reads } = container(table, name, shares);
    await callers.run(alice, async () => reads.paymentsOfOrder(await paidOrder(), deadline()));
    await backgroundSettled();
    const budgetAfterFirst = await table.readBudget();
    const takeSlot = vi.spyOn(table, 'takeSlot');

    // Act: two more reads of orders nobody read.
    const second = await callers.run(alice, async () =>
      reads.paymentsOfOrder(await paidOrder(), deadline()).catch((error: unknown) => error),
    );
    await backgroundSettled();
    const budgetAfterSecond = await table.readBudget();
    const slotsBeforeThird = takeSlot.mock.calls.length;
    const third = await callers.run(alice, async () =>
      reads.paymentsOfOrder(await paidOrder(), deadline()).catch((error: unknown) => error),
    );

    // Assess: both refused; the second's slot went back as it was; the third took none.
    expect(second).toBeInstanceOf(CallerRateLimitedError);
    expect(third).toBeInstanceOf(CallerRateLimitedError);
    expect(slotsBeforeThird).toBe(1);
    expect(budgetAfterSecond.busyUntil).toEqual(budgetAfterFirst.busyUntil);
    expect(budgetAfterSecond.pausedUntil).toEqual(budgetAfterFirst.pausedUntil);
    expect(takeSlot.mock.calls.length).toBe(1);
  });
});

describe('a first page of the subscription list (lib/reads/subscription-pages.ts)', () => {
  it('takes its slot beside its lookups (the latest snapshot, the shared list) when neither is there', async () => {
    // Prepare: lookups that take 150 ms each.
    const { table, name, shares } = await setUp();
    const { store, reads } = container(table, name, shares);
    const pages = new SubscriptionPages({ reads, store });
    const get = store.get.bind(store);
    let lookedUpAt = 0;
    vi.spyOn(store, 'get').mockImplementation(async (...args) => {
      await sleep(150);
      lookedUpAt = performance.now();
      return get(...args);
    });
    const takeSlot = table.takeSlot.bind(table);
    const slotsAt: number[] = [];
    vi.spyOn(table, 'takeSlot').mockImplementation((...args) => {
      slotsAt.push(performance.now());
      return takeSlot(...args);
    });
    sandbox.resetCounters();

    // Act
    const page = await callers.run(alice, () => pages.page({ limit: 100, deadline: deadline() }));

    // Assess: one slot, taken before the lookups answered; one list; one call counted.
    expect(page.shared).toBe(false);
    expect(page.records.length).toBeGreaterThan(0);
    expect(slotsAt).toHaveLength(1);
    expect(slotsAt[0]!).toBeLessThan(lookedUpAt);
    expect(sandbox.counters().listSubscriptions).toBe(1);
    expect(await shareCounts(name)).toBe(1);
  });

  it('gives the slot back when another container’s snapshot is there, and reads its pages from it', async () => {
    // Prepare: another container listed the first of several pages, and kept the snapshot.
    const { table, name, shares } = await setUp();
    const other = container(table, name, shares);
    await callers.run(alice, () =>
      new SubscriptionPages({ reads: other.reads, store: other.store }).page({
        limit: 1,
        deadline: deadline(),
      }),
    );
    await backgroundSettled();
    const budgetBefore = await table.readBudget();
    sandbox.resetCounters();

    // Act: a container that never saw the list asks its first page.
    const { store, reads } = container(table, name, shares);
    const page = await callers.run(alice, () =>
      new SubscriptionPages({ reads, store }).page({ limit: 1, deadline: deadline() }),
    );
    await backgroundSettled();

    // Assess: from the snapshot; the budget as it was.
    expect(page.shared).toBe(true);
    expect(page.next).not.toBeNull();
    expect(sandbox.counters().listSubscriptions ?? 0).toBe(0);
    expect(slotsOf(await table.readBudget())).toEqual(slotsOf(budgetBefore));
  });
});

describe('a read beyond its caller’s share', () => {
  it('hands back the slot taken beside its lookup and takes a spare one; the caller’s next read counts its share first', async () => {
    // Prepare: a customer with one PayHere call per 10 s within its share, which it used.
    const { table, name, shares } = await setUp('1/10000');
    const { reads } = container(table, name, shares);
    await callers.run(alice, async () => reads.paymentsOfOrder(await paidOrder(), deadline()));
    await backgroundSettled();
    const takeSlot = vi.spyOn(table, 'takeSlot');
    const handBack = vi.spyOn(table, 'handBackSlot');
    sandbox.resetCounters();

    // Act: two more reads of orders nobody read.
    const second = await callers.run(alice, async () => reads.paymentsOfOrder(await paidOrder(), deadline()));
    await backgroundSettled();
    const third = await callers.run(alice, async () => reads.paymentsOfOrder(await paidOrder(), deadline()));

    // Assess: both answered by PayHere; the second's reserved slot went back and a spare one was
    // taken; the third took a spare one only (the 7th argument: yield to calls within a share). A
    // take the table refused or answered late (a loaded machine's dynalite) is asked again: the
    // slots taken are what counts.
    const outcomes = await Promise.all(
      takeSlot.mock.results.map((result) =>
        (result.value as Promise<{ taken: boolean }>).then(
          (outcome) => outcome.taken,
          () => false,
        ),
      ),
    );
    const taken = takeSlot.mock.calls
      .filter((_, i) => outcomes[i])
      .map((args) => args[6]?.includes('owed') === true);
    expect([second.shared, third.shared]).toEqual([false, false]);
    expect(sandbox.counters().search).toBe(2);
    expect(taken).toEqual([false, true, true]);
    expect(takeSlot.mock.calls.slice(1).every((args) => args[6]?.includes('owed') === true)).toBe(true);
    expect(handBack).toHaveBeenCalledTimes(1);
    expect(await shareCounts(name)).toBe(3);
  });
});

describe('a reservation its call never used', () => {
  it('goes back when the call fails before its first attempt: no token, say', async () => {
    // Prepare: no token in the table, and PayHere refusing the credentials.
    const { table, name } = await freshStateTable();
    const shares = new CallerShares({
      client: dynamoDbAt(inject('dynamodbEndpoint')),
      table: name,
      timeoutMs: 2_000,
      config: loadSharesConfig({}),
    });
    const { reads } = container(table, name, shares);
    const orderId = await paidOrder();
    sandbox.faults.inject('token', { kind: 'status', status: 401 }, 10);
    const handBack = vi.spyOn(table, 'handBackSlot');

    // Act
    const failed = await callers.run(alice, () =>
      reads.paymentsOfOrder(orderId, deadline()).catch((error: unknown) => error),
    );
    await backgroundSettled();

    // Assess: the read failed; its slot went back, and its caller's count with it.
    expect(failed).toBeInstanceOf(Error);
    expect(handBack).toHaveBeenCalledTimes(1);
    expect(await shareCounts(name)).toBe(0);
  });
});

describe('a read whose answer this container saw within its window', () => {
  it('looks it up alone: no slot, no share', async () => {
    // Prepare: this container read the order.
    const { table, name, shares } = await setUp();
    const { reads } = container(table, name, shares);
    const orderId = await paidOrder();
    await callers.run(alice, () => reads.paymentsOfOrder(orderId, deadline()));
    await backgroundSettled();
    const takeSlot = vi.spyOn(table, 'takeSlot');
    const sharesBefore = await shareCounts(name);

    // Act
    const read = await callers.run(alice, () => reads.paymentsOfOrder(orderId, deadline()));

    // Assess
    expect(read.shared).toBe(true);
    expect(takeSlot).not.toHaveBeenCalled();
    expect(await shareCounts(name)).toBe(sharesBefore);
  });
});

describe('a slot handed back', () => {
  it('is as it was before it was taken, and only while it is still the one taken', async () => {
    const { table } = await freshStateTable();
    const now = Date.now();
    // Slot 1 never used; slot 2 last used at `now - 60_000`.
    await table.takeSlot(2, now - 60_000, now, now, 'take-a');
    const one = await table.takeSlot(1, now + 5_000, now, now, 'take-b');
    const two = await table.takeSlot(2, now + 5_000, now, now, 'take-c');

    await table.handBackSlot(1, now + 5_000, one.taken ? one.previous : -1);
    await table.handBackSlot(2, now + 5_000, two.taken ? two.previous : -1);
    const handedBack = await table.readBudget();
    // Slot 1 taken again, then released by its request: a late hand-back of the earlier taking changes nothing.
    await table.takeSlot(1, now + 6_000, now, now, 'take-d');
    await table.releaseSlot(1, now + 6_000, now + 100);
    await table.handBackSlot(1, now + 5_000, undefined);

    expect(handedBack.busyUntil.has(1)).toBe(false);
    expect(handedBack.busyUntil.get(2)).toBe(now - 60_000);
    expect((await table.readBudget()).busyUntil.get(1)).toBe(now + 100);
  });
});
