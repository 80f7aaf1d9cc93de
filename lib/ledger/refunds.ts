import { type AttributeValue, UpdateItemCommand } from '../dynamodb/index.ts';
import { appendEvents, type LedgerEvent } from './outbox.ts';
import { LedgerTable, number, optionalNumber, optionalText } from './table.ts';

/**
 * A payment's refunds through the service, an item of its own: `refund#<payment_id>`. Not on the
 * `payment#<id>` reference: that item is written whole (a Put) whenever a charge adopts or links the
 * payment again, which would drop the slot; and a merchant refunds payments the ledger never
 * linked, whose refunds must be kept one at a time just the same.
 */
export const refundsKey = (paymentId: string) => `refund#${paymentId}`;

/** The one refund of a payment that may be in flight at PayHere. */
export interface RefundSlot {
  /** The refund request's idempotency record key: only it frees the slot. */
  key: string;
  /** Epoch ms: when it was taken. */
  takenAt: number;
  /** In cents; null for a full refund. */
  amountCents: number | null;
  /** Who sent it (the caller's `sub`), kept beside the refund's key for its record; null when not known. */
  by?: string | null;
}

/** A refund PayHere accepted through the service (its answer, or its records after a lost answer). */
export interface AcceptedRefund {
  key: string;
  amountCents: number | null;
  /** PayHere's refund number; null when only its records showed the refund. */
  refundId: number | null;
  /** Epoch ms: when the service learned it. */
  at: number;
  /** Who sent it (a `sub`); null for a refund recorded before the service kept it. */
  by: string | null;
}

/** What the service knows of a payment's refunds. */
export interface PaymentRefunds {
  paymentId: string;
  inflight: RefundSlot | null;
  accepted: AcceptedRefund[];
  /** The accepted partial refunds' amounts, in cents (a full refund's amount is PayHere's to know). */
  refundedCents: number;
  /** Refunds whose outcome could not be determined: they may have been made. */
  undetermined: number;
  /**
   * The payment's status in PayHere's records as a read of them after its first accepted refund
   * showed it (the only refund state PayHere exposes), and when that read was sent; null until one was kept.
   */
  payhere: PayHereStatus | null;
}

/** A payment's status in PayHere's records, and when the read that showed it was sent (epoch ms). */
export interface PayHereStatus {
  status: string;
  at: number;
}

/** Who sent the refund under `key`: an attribute of its own, written with the slot, read with the refunds. */
const byName = (key: string) => `by#${key}`;

/** What freeing the slot records of its refund (lib/orders/refund-evidence.ts decides which). */
export type RefundRecord =
  | { accepted: { amountCents: number | null; refundId: number | null } }
  | { undetermined: true }
  | null;

const NAMES = {
  '#inflight': 'inflight',
  '#inflightAt': 'inflightAt',
  '#inflightCents': 'inflightCents',
  '#paymentId': 'paymentId',
  '#refunds': 'refunds',
  '#refundCount': 'refundCount',
  '#refundedCents': 'refundedCents',
  '#undetermined': 'undetermined',
  '#settledKeys': 'settledKeys',
  '#payhereStatus': 'payhereStatus',
  '#payhereStatusAt': 'payhereStatusAt',
  '#at': 'at',
};
type Name = keyof typeof NAMES;

const namesIn = (expression: string) =>
  Object.fromEntries(
    (Object.keys(NAMES) as Name[])
      .filter((name) => new RegExp(`${name}\\b`).test(expression))
      .map((name) => [name, NAMES[name]]),
  );

const FREE_SLOT = 'REMOVE #inflight, #inflightAt, #inflightCents';

/** The ledger's refund items: each payment's refund slot and what PayHere accepted. */
export class LedgerRefunds extends LedgerTable {
  /** What the ledger knows of the payment's refunds (nothing yet: none, no slot held). */
  async paymentRefunds(paymentId: string): Promise<PaymentRefunds> {
    return refundsOfItem(paymentId, await this.get(refundsKey(paymentId)));
  }

  /**
   * Take the payment's refund slot for `slot.key`: only while no refund holds it, or this very one
   * does (the client's repeat of a write whose answer was lost finds its own write), and never for a
   * key whose refund is settled already. False otherwise.
   */
  async takeRefundSlot(
    paymentId: string,
    slot: RefundSlot,
    events?: readonly LedgerEvent[],
  ): Promise<boolean> {
    // The slot taken anew is recorded with its event; found held by this very refund (its write
    // repeated after a lost answer), it is taken again without one, and the relay reads the item.
    if (events?.length && (await this.#takeSlot(paymentId, slot, events))) return true;
    const taken = await this.#takeSlot(paymentId, slot);
    if (taken && events?.length) this.onEvents(refundsKey(paymentId));
    return taken;
  }

  #takeSlot(paymentId: string, slot: RefundSlot, events?: readonly LedgerEvent[]): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':key': { S: slot.key },
      ':at': number(slot.takenAt),
      ':paymentId': { S: paymentId },
    };
    let update = 'SET #inflight = :key, #inflightAt = :at, #paymentId = :paymentId';
    if (slot.amountCents === null) update += ' REMOVE #inflightCents';
    else {
      update = update.replace('SET ', 'SET #inflightCents = :cents, ');
      values[':cents'] = number(slot.amountCents);
    }
    // A key whose refund was settled already never takes the slot again (the key reused once its
    // record expired): its outcome could not be recorded, and the slot would be held for good.
    const condition = `${events ? 'attribute_not_exists(#inflight)' : '(attribute_not_exists(#inflight) OR #inflight = :key)'} AND NOT contains(#settledKeys, :key)`;
    const names: Record<string, string> = {};
    if (slot.by) {
      update = update.replace('SET ', 'SET #by = :by, ');
      values[':by'] = { S: slot.by };
      names['#by'] = byName(slot.key);
    }
    return this.#update(paymentId, update, condition, values, names, events);
  }

  /**
   * Free the slot `key` holds, recording what its refund came to. A record is written once per key
   * (`settledKeys`): repeated after a lost answer, or by the settlement of a refund whose slot was
   * freed meanwhile, it finds itself there and adds nothing. True when the ledger now holds it;
   * false when there was nothing of `key`'s to free. With `takenAt`, only the slot as it was taken
   * then is freed: another refund freeing a slot left behind never frees it once its key took it
   * again (the client's retry, sending its refund now).
   */
  async finishRefund(
    paymentId: string,
    key: string,
    record: RefundRecord,
    events?: readonly LedgerEvent[],
    takenAt?: number,
  ): Promise<boolean> {
    const held = takenAt === undefined ? '#inflight = :key' : '#inflight = :key AND #inflightAt = :takenAt';
    const instance: Record<string, AttributeValue> =
      takenAt === undefined ? {} : { ':takenAt': number(takenAt) };
    // A refund that was not made keeps no record, nor who sent it: a caller's refusals (above what is
    // left, refused by PayHere) must not grow the payment's item.
    if (record === null)
      return this.#update(
        paymentId,
        `${FREE_SLOT}, #by`,
        held,
        { ':key': { S: key }, ...instance },
        {
          '#by': byName(key),
        },
        events,
      );
    const values: Record<string, AttributeValue> = { ':key': { S: key }, ':keys': { SS: [key] } };
    let set = '';
    let add = '#settledKeys :keys';
    if ('accepted' in record) {
      values[':entry'] = {
        L: [{ M: acceptedItem({ key, ...record.accepted, at: this.now() }) }],
      };
      values[':none'] = { L: [] };
      values[':one'] = number(1);
      values[':cents'] = number(record.accepted.amountCents ?? 0);
      set = 'SET #refunds = list_append(if_not_exists(#refunds, :none), :entry) ';
      add += ', #refundCount :one, #refundedCents :cents';
    } else {
      values[':one'] = number(1);
      add += ', #undetermined :one';
    }
    const notYet = 'NOT contains(#settledKeys, :key)';
    if (
      await this.#update(
        paymentId,
        `${set}${FREE_SLOT} ADD ${add}`,
        `${held} AND ${notYet}`,
        { ...values, ...instance },
        {},
        events,
      )
    )
      return true;
    const item = await this.get(refundsKey(paymentId));
    if (item?.settledKeys?.SS?.includes(key)) {
      // Recorded before; a slot the key still holds (taken again before keys were refused that) is freed.
      if (item.inflight?.S === key)
        await this.#update(paymentId, FREE_SLOT, held, { ':key': { S: key }, ...instance });
      return true;
    }
    // The slot is not this refund's (freed meanwhile, or never taken): its outcome is kept all the same.
    return this.#update(paymentId, `${set}ADD ${add}`, notYet, values, {}, events);
  }

  /**
   * Keep PayHere's status of a payment with refunds, as a read of PayHere's records sent at
   * `seen.at` showed it. Written only where the payment has a refund PayHere accepted that the
   * service had learned of by then (a read sent earlier shows nothing of it), and only over nothing
   * kept yet, or over an older read showing another status: a read showing what is kept already
   * writes nothing, an older read never replaces a newer one, and a write repeated after its answer
   * was lost finds itself there. False when nothing was written.
   */
  keepPayHereStatus(paymentId: string, seen: PayHereStatus): Promise<boolean> {
    return this.#update(
      paymentId,
      'SET #payhereStatus = :status, #payhereStatusAt = :at',
      'attribute_exists(#refunds) AND #refunds[0].#at <= :at AND (attribute_not_exists(#payhereStatusAt) OR (#payhereStatusAt < :at AND #payhereStatus <> :status))',
      { ':status': { S: seen.status }, ':at': number(seen.at) },
    );
  }

  /** A conditional update of the payment's refund item; `events` appended to its outbox by the same write. */
  #update(
    paymentId: string,
    update: string,
    condition: string,
    values: Record<string, AttributeValue>,
    names: Record<string, string> = {},
    events?: readonly LedgerEvent[],
  ): Promise<boolean> {
    let expression = update;
    if (events?.length) {
      const outbox = appendEvents(events, this.now());
      expression = withSet(update, outbox.set);
      values = { ...values, ...outbox.values };
      names = { ...names, ...outbox.names };
    }
    const command = new UpdateItemCommand({
      TableName: this.table,
      Key: { pk: { S: refundsKey(paymentId) } },
      UpdateExpression: expression,
      ConditionExpression: condition,
      ExpressionAttributeNames: { ...namesIn(`${expression} ${condition}`), ...names },
      ExpressionAttributeValues: values,
    });
    return events?.length ? this.recording(refundsKey(paymentId), command) : this.conditional(command);
  }
}

/** `update` with `clauses` added to its SET (one made when it has none). */
export function withSet(update: string, clauses: string): string {
  return /^SET /.test(update) ? update.replace(/^SET /, `SET ${clauses}, `) : `SET ${clauses} ${update}`;
}

function acceptedItem(refund: Omit<AcceptedRefund, 'by'>): Record<string, AttributeValue> {
  const nullable = (value: number | null): AttributeValue =>
    value === null ? { NULL: true } : number(value);
  return {
    key: { S: refund.key },
    cents: nullable(refund.amountCents),
    refundId: nullable(refund.refundId),
    at: number(refund.at),
  };
}

function acceptedOf(item: Record<string, AttributeValue>): Omit<AcceptedRefund, 'by'> {
  return {
    key: optionalText(item, 'key') ?? '',
    amountCents: optionalNumber(item, 'cents'),
    refundId: optionalNumber(item, 'refundId'),
    at: optionalNumber(item, 'at') ?? 0,
  };
}

/** What a payment's refund item (undefined: none yet) says of its refunds. */
export function refundsOfItem(
  paymentId: string,
  item: Record<string, AttributeValue> | undefined,
): PaymentRefunds {
  const key = item && optionalText(item, 'inflight');
  return {
    paymentId,
    inflight:
      item && key
        ? {
            key,
            takenAt: optionalNumber(item, 'inflightAt') ?? 0,
            amountCents: optionalNumber(item, 'inflightCents'),
            by: optionalText(item, byName(key)),
          }
        : null,
    accepted: (item?.refunds?.L ?? []).flatMap((entry) => {
      if (!entry.M) return [];
      const accepted = acceptedOf(entry.M);
      return [{ ...accepted, by: optionalText(item!, byName(accepted.key)) }];
    }),
    refundedCents: (item && optionalNumber(item, 'refundedCents')) ?? 0,
    undetermined: (item && optionalNumber(item, 'undetermined')) ?? 0,
    payhere: payhereOf(item),
  };
}

function payhereOf(item: Record<string, AttributeValue> | undefined): PayHereStatus | null {
  const status = item && optionalText(item, 'payhereStatus');
  const at = item && optionalNumber(item, 'payhereStatusAt');
  return status && at !== null && at !== undefined ? { status, at } : null;
}
