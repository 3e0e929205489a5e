/** The timing of a waiter's reads (the read schedule, `ReadScheduler`): pauses, caps and the aims of far-back reads. */

/** Shortest pause between polls, and the first one when nothing is known about the holder. */
export const POLL_MIN_MS = 2;
export const FIRST_POLL_MS = 5;
/** Growth of the pause while a release is overdue or nothing is known. */
export const POLL_GROWTH = 1.5;
/**
 * Longest pause of the waiter next in line while the holder's release is overdue, beyond a round
 * trip: a release sent at any moment (a graceful stop, a hold longer than usual) is seen within
 * two round trips and this (its write lands half a round trip after it is sent, the next read
 * arrives at most a pause later, its answer half a round trip after that). The price: that
 * waiter's reads, mostly eventually consistent, for as long as the release is overdue.
 */
export const NEXT_IN_LINE_SLACK_MS = 5;
/**
 * How long the waiter next in line reads that closely once the release is overdue: a release that
 * comes later than that (a long job stopped at some moment) is seen within a round trip and
 * {@link BEHIND_POLL_MS}, so a holder far past its usual hold costs its waiter ten reads a second,
 * not a hundred, and one overdue release at most this long of close reads.
 */
export const NEXT_IN_LINE_CLOSE_MS = 2_000;
/** Further back while the release ahead is overdue (and next in line once it is long overdue), reads are at least this far apart (the line moves a turn at a time). */
export const BEHIND_POLL_MS = 100;
/** A holder's start read from the item's wall-clock times is trusted only this far ahead of this host's clock, and this old at most. */
export const PLAUSIBLE_SKEW_MS = 50;
export const MAX_HINT_AGE_MS = 60_000;
/** A promoted waiter that learned it later than this after the release (by wall clocks) says nothing about the usual delay. */
export const MAX_PROMOTION_DELAY_MS = 1_000;
/**
 * A promotion delay counts at most this many round trips: a waiter that read late (its own timing)
 * would otherwise teach the others to time their reads later still.
 */
export const PROMOTION_DELAY_RTTS = 3;
/**
 * Beyond this many tickets ahead, a waiter is far back: it times its reads by the pace it saw the
 * line move at, and they are eventually consistent (half the price).
 */
export const FAR_TURNS = 4;
/** Far back, a read aims at this share of the place in line still ahead, and at least three turns early: the margin for a pace that changes. */
export const FAR_AIM = 0.1;
export const FAR_AIM_MIN = 3;
/**
 * The pace measured is taken at most this many turns of usual hold and round trips (a stall seen
 * must not slow reads for good); far back, from a single span, at most one.
 */
export const PACE_LIMIT = 2;
/**
 * The line's pace is the fastest of this many spans measured last: a stall slows the span it
 * falls in, never speeds one up, and a waiter that takes a slow span for the pace sleeps past
 * its turn, which stalls the line again.
 */
export const PACE_SPANS = 3;
/** A line seen standing still for this many usual turns stalled (a far-back waiter reads that far apart only when it moves slower). */
export const STILL_TURNS = 8;
