import type { ShareTaken } from '../budget/caller-shares.ts';
import type { Permit } from '../budget/limiter.ts';
import { inBackground } from '../net/background.ts';

/**
 * A caller's share and a slot of PayHere's budget, taken beside a lookup that may make the call
 * needless (GatewayClient.reserve): the call's first attempt uses them; a call not made gives both
 * back, the slot as it was before (never used) and the share's count, after the caller's answer.
 */
export class Reservation {
  readonly #share: Promise<ShareTaken | undefined>;
  readonly #slot: Promise<Permit>;
  /** Aborted once the call will not be made: a slot still waited for is not taken. */
  readonly #unwanted: AbortController;
  #settled = false;

  constructor(share: Promise<ShareTaken | undefined>, slot: Promise<Permit>, unwanted: AbortController) {
    this.#share = share;
    this.#slot = slot;
    this.#unwanted = unwanted;
    // Either may fail before anyone waits for it: its failure is use()'s to report.
    share.catch(() => {});
    slot.catch(() => {});
  }

  /**
   * The slot for the call. The caller refused its share: the slot goes back unused, and the refusal
   * is thrown. The call beyond its caller's share: the slot goes back unused too, and none is
   * returned (the call takes a spare one: lib/budget/limiter.ts).
   */
  async use(): Promise<Permit | undefined> {
    this.#settled = true;
    let taken: ShareTaken | undefined;
    try {
      taken = await this.#share;
    } catch (error) {
      this.#handBack();
      throw error;
    }
    if (!taken?.beyond) {
      return this.#slot.catch((error: unknown) => {
        // No slot: the call is not made, and costs its caller nothing of its share.
        if (taken) inBackground(() => taken.giveBack());
        throw error;
      });
    }
    this.#handBack();
    return undefined;
  }

  #handBack(): void {
    this.#unwanted.abort();
    inBackground(() =>
      this.#slot.then(
        (permit) => permit.handBack(),
        () => {},
      ),
    );
  }

  /**
   * The call will not be made: a slot still waited for is not taken (nor its place in the
   * container's queue held), and what was taken goes back, without holding up the caller.
   */
  cancel(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#unwanted.abort();
    inBackground(() =>
      Promise.allSettled([
        this.#share.then((taken) => taken?.giveBack()),
        this.#slot.then((permit) => permit.handBack()),
      ]),
    );
  }
}
