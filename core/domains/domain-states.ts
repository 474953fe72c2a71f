/**
 * States of a customer domain, and what a check moves it to. Pure: no I/O.
 *
 * - `pending`: added; the TXT record `_hoist-challenge.<hostname>` does not hold the token yet.
 * - `verified`: the TXT record holds the token (ownership proven), the CNAME does not point at the
 *   project's host yet. Not served.
 * - `active`: both records are right; the edge serves the project on this hostname.
 * - `misconfigured`: the domain was verified before and a later check found a record gone or wrong.
 *   Not served. When the records are right again it goes back to `active`.
 * - `failed`: another project holds the hostname: it proved control first (this claim was pending),
 *   its token is in the TXT record too, or it took the name over from this one (whose token left
 *   the record). Not served and not checked on its own; `verify` checks it again.
 *
 * A hostname may be claimed by any number of projects at once, but held by one: the first whose
 * TXT record holds its token gets it (verified, active or misconfigured hold it). A project whose
 * token is in the record while the holder's is not any more takes it over: control of the DNS
 * decides, not who asked first. Pending claims never block anyone, and the scheduled checks
 * remove those not verified within domainPendingTtlSeconds.
 *
 * A lookup that fails (timeout, SERVFAIL) changes no state: the check is retried with backoff.
 */
export const DOMAIN_STATES = ['pending', 'verified', 'active', 'misconfigured', 'failed'] as const;
export type DomainState = (typeof DOMAIN_STATES)[number];
/** The states in which a domain holds its hostname (no other project's domain can be in one for it). */
export const HOLDING_STATES: readonly DomainState[] = ['verified', 'active', 'misconfigured'];

export const STATES_TEXT =
  'pending (waiting for the TXT record), verified (TXT record found, CNAME not ' +
  'yet), active (both records right: served), ' +
  'misconfigured (was verified, a later check found a record gone or wrong: not ' +
  'served until the records are right again), ' +
  'failed (another project holds the hostname; message says why: not served, not ' +
  'checked on its own, verify checks again)';

/** What a check found in DNS. */
export type Findings =
  | { ok: true; txt: string[]; cname: string[] }
  /** The lookup itself failed; `reason` says how (timeout, servfail...). */
  | { ok: false; reason: string };

/** A domain as the rules see it. */
export interface DomainFacts {
  hostname: string;
  status: string;
  token: string;
  /** `<slug>.<appsDomain>`: where the CNAME must point. */
  target: string;
  failures: number;
  verifiedAt: Date | null;
  activatedAt: Date | null;
}

/** Check schedule, in seconds (config keys domainCheckSeconds, domainCheckMaxSeconds, domainActiveCheckSeconds). */
export interface CheckSchedule {
  checkSeconds: number;
  maxSeconds: number;
  activeSeconds: number;
}

/** What to write after a check. */
export interface CheckOutcome {
  status: DomainState;
  message: string | null;
  failures: number;
  verifiedAt: Date | null;
  activatedAt: Date | null;
  lastCheckedAt: Date;
  nextCheckAt: Date;
}

export const challengeName = (hostname: string) => `_hoist-challenge.${hostname}`;

/** Why a claim failed: another project proved control of the hostname first. */
export const lostMessage = (hostname: string) =>
  `${hostname} was verified by another project first, so this domain is not served or checked any more. ` +
  `If you control the name, make the TXT record at ${challengeName(hostname)} hold ` +
  `this domain's token (and not the other's), then call verify to take it over; or ` +
  `remove this domain.`;

/** Why a domain that held its hostname failed: another project proved control since. */
export const displacedMessage = (hostname: string) =>
  `Another project proved control of ${hostname}: the TXT record at ` +
  `${challengeName(hostname)} holds its token and no longer this domain's. ` +
  'This domain is not served or checked any more; put its token back (alone) and ' +
  'call verify to take the name back, or remove it.';

/**
 * The state a domain moves to after a check at `now` that found `f`, and when to check it next.
 * `holderToken` is the token of another project's domain that holds the hostname, if any: while
 * the TXT record holds it too, this domain cannot get the name (failed); when it does not, this
 * one takes the name over as if it were free.
 */
export function afterCheck(
  d: DomainFacts,
  f: Findings,
  now: Date,
  s: CheckSchedule,
  holderToken: string | null = null,
): CheckOutcome {
  const later = (failures: number, status: string) => {
    const seconds =
      status === 'active' ? s.activeSeconds : Math.min(s.checkSeconds * 2 ** Math.min(failures, 30), s.maxSeconds);
    return new Date(now.getTime() + seconds * 1000);
  };
  if (!f.ok) {
    const failures = d.failures + 1;
    const seconds = Math.min(
      s.checkSeconds * 2 ** Math.min(failures - 1, 30),
      s.maxSeconds,
      d.status === 'active' ? s.activeSeconds : Infinity,
    );
    return {
      status: d.status as DomainState,
      message:
        `The DNS lookup failed (${f.reason}); the records are checked again later and the ` +
        `domain keeps its state until then.`,
      failures,
      verifiedAt: d.verifiedAt,
      activatedAt: d.activatedAt,
      lastCheckedAt: now,
      nextCheckAt: new Date(now.getTime() + seconds * 1000),
    };
  }
  const problems: string[] = [];
  const txtOk = f.txt.includes(d.token);
  const cnameOk = f.cname.includes(d.target);
  if (!txtOk) {
    problems.push(
      f.txt.length
        ? `The TXT record at ${challengeName(d.hostname)} holds ` +
            `${f.txt.map((t) => JSON.stringify(t)).join(', ')}, not the token ${d.token}.`
        : `No TXT record at ${challengeName(d.hostname)}: add one holding ${d.token}.`,
    );
  }
  if (!cnameOk) {
    problems.push(
      f.cname.length
        ? `${d.hostname} is a CNAME for ${f.cname.join(', ')}, not ${d.target}.`
        : `No CNAME record at ${d.hostname}: point it at ${d.target}.`,
    );
  }
  const held = txtOk && holderToken !== null && f.txt.includes(holderToken);
  let status: DomainState;
  if (held || (d.status === 'failed' && !txtOk)) {
    // A failed domain gets its name only by proving control, so it stays failed until then.
    status = 'failed';
    problems.unshift(
      held
        ? `${d.hostname} is held by another project whose token is in the TXT record at ` +
            `${challengeName(d.hostname)} too: remove that one (keep ${d.token}) and call ` +
            `verify to take the name over.`
        : `This domain lost ${d.hostname} to another project and is not checked on its own ` +
            `any more: call verify once the TXT record at ${challengeName(d.hostname)} holds ` +
            `${d.token}.`,
    );
  } else if (txtOk && cnameOk) status = 'active';
  else if (d.activatedAt || (d.verifiedAt && !txtOk)) status = 'misconfigured';
  else if (txtOk) status = 'verified';
  else status = 'pending';
  const failures = status === 'active' ? 0 : status === d.status ? d.failures + 1 : 0;
  return {
    status,
    message: problems.length ? problems.join(' ') : null,
    failures,
    verifiedAt: d.verifiedAt ?? (txtOk && status !== 'failed' ? now : null),
    activatedAt: d.activatedAt ?? (status === 'active' ? now : null),
    lastCheckedAt: now,
    nextCheckAt: later(failures, status),
  };
}
