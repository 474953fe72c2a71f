/**
 * At most `size` pieces of some costly work at once in this process (the access gate's password checks, each an
 * argon2id hash on the thread pool that also serves static files): past it, `take` refuses at once rather than
 * queueing, so a burst of checks answers "busy" instead of stalling every other request.
 */
export class CheckSlots {
  private busy = 0;

  constructor(readonly size: number) {}

  /** Takes a free slot and answers the function that gives it back (once), or null when every slot is taken. */
  take(): (() => void) | null {
    if (this.busy >= this.size) return null;
    this.busy++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.busy--;
    };
  }

  /** The slots taken now. */
  get taken(): number {
    return this.busy;
  }
}
