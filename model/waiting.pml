/*
 * nestjs-dynamo-lock: the cross-process waiting protocol on one DynamoDB lock item
 * (tickets, promotion by release, roll-call, skip), for SPIN. What is modelled, the bounds
 * and every abstraction: README.md next to this file. Run it with model/run.sh.
 *
 * One process = one lock client (one caller at a time, its callers one after another).
 * Every action of a process is one atomic step (d_step): a write is applied to the item as it
 * is sent and its answer comes back in the same step, or is lost. Time: a clock process ticks;
 * every process counts leases and watch times in ticks. A process that is not scheduled while
 * the clock ticks is paused (a crash is a pause that never ends).
 *
 * Configuration macros (defaults below):
 *   N          processes (2 or 3)            ROUNDS     acquisitions each process wants
 *   TOKS       tokens (callers) per process  MAXT       ticket bound (tail never exceeds it)
 *   L0 L1 L2   lease of each process, ticks  CLAIM      claim lease of an unclaimed head, ticks
 *   LOSS       lost answers in a run         DUPS       delayed duplicate writes in a run
 *   HBS        heartbeats per hold           HANDOVERS  local hand-overs in a run
 *   ABANDONS   waiters giving up in a run    LIVE       liveness run (see README)
 *   LEFT_MAX   size bound of the item's `left` set (the engine's is 32)
 *   TAKEOVERS  a later caller of the process takes over the ticket of a caller that gave up
 *   Broken variants, which must fail: BUG_LEASE_FROM_HEAD_READ, BUG_SKIP_NO_RVN,
 *   BUG_ENQ_HEAD_FROM_SEND (safety), BUG_NO_SKIP_UNCLAIMED (liveness, with LIVE).
 *   FINDING_TICKET_MISATTRIBUTION: a waiter whose ticket is the head held by another token also
 *   answers the roll-call (fails, see README); FIX_FREE_SETS_TAILTOKEN: the fix (passes).
 *   BUG_EVENTUAL_REFRESHES_VIEW (safety): an eventually consistent read showing another head
 *   counts as a recent answer (a promoted lease would count from it).
 *   Leaving the line (safety, must fail): BUG_LEAVE_HELD_BY_TICKET (holding by ticket, and a
 *   waiter's view of being served, ignore `left`), BUG_LEAVE_AT_HEAD (a leave lands on the
 *   ticket `head` serves), BUG_SKIP_BEFORE_PASS_LEFT (a waiter whose view shows the head left
 *   waits for it to be silent a claim lease and skips it, as before `left` existed),
 *   BUG_PASS_LEFT_KEEPS_RVN (the pass of left tickets keeps the record version),
 *   BUG_PASS_LEFT_NO_HEAD_CHECK (the pass is conditioned on no token only).
 *   DROP_PASS_LEFT_NO_TOKEN, DROP_PASS_LEFT_IN_LEFT: the pass without one of its other conjuncts
 *   (both verify: see README).
 */

#ifndef N
#define N 2
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef TOKS
#define TOKS 3
#endif
#ifndef MAXT
#define MAXT 6
#endif
#ifndef L0
#define L0 3
#endif
#ifndef L1
#define L1 3
#endif
#ifndef L2
#define L2 3
#endif
#ifndef CLAIM
#define CLAIM 2
#endif
#ifndef LOSS
#define LOSS 1
#endif
#ifndef LOSSES
#define LOSSES 255        /* which answers may be lost: 1 free acquire, 2 enqueue, 4 roll-call, 8 skip, 16 claim, 32 heartbeat, 64 leave, 128 pass of left tickets */
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef HBS
#define HBS 1
#endif
#ifndef HANDOVERS
#define HANDOVERS 0
#endif
#ifndef ABANDONS
#define ABANDONS 1
#endif
#ifndef LEFT_MAX
#define LEFT_MAX 1
#endif
#ifndef TAKEOVERS
#define TAKEOVERS 0
#endif

#define NONE 255
#define LIVE_MINE 0
#define LIVE_ABOVE 254

/* phases of a process */
#define IDLE 0    /* wants the lock, has no ticket */
#define WAIT 1    /* has a ticket, waits for its turn */
#define ENQR 2    /* its enqueue's answer was lost: retries it */
#define CLAIMP 3  /* head (or own token in the item) without a valid lease: must claim first */
#define HOLD 4    /* believes it holds the lock */
#define RELP 5    /* must release at once (a waiter that gave up was served) */
#define DONE 6
#define FOLP 7    /* released onto a left ticket: passes the left tickets now served, then its round ends */

/* writes that a delayed duplicate may repeat */
#define W_FREE 1
#define W_ENQ 2
#define W_HB 3
#define W_LEAVE 4

#define LL(q) ((q) == 0 -> L0 : ((q) == 1 -> L1 : L2))
#define LCQ(q) (LL(q) < CLAIM -> LL(q) : CLAIM)
#define TOK(q) ((q) * TOKS + ntok[q])
#define P _pid

#ifdef BUG_NO_SKIP_UNCLAIMED
/* broken: nobody watches a head that never claims the lock */
#define UNCLAIMED_P 0
#else
#define UNCLAIMED_P CLAIM
#endif

/* ---- the lock item ---- */
byte head, tail;          /* ticket now served; next ticket to issue (free: head == tail) */
byte fd;                  /* fence, kept as fence minus the fence of the last grant */
byte itok;                /* holder's token, 0: absent */
byte ilease;              /* leaseMs, 0: absent */
byte rvn = 1;             /* record version: a fresh value on every grant/heartbeat/hand-over/release/skip (see canon) */
byte live = NONE;         /* roll-call register */
byte tailTok;             /* token of the last enqueue (0 when no retry of it can still come) */
/*
 * The `left` set: tickets whose waiters left the line. Kept relative to head (bit i: ticket
 * head + i is in the set), so it needs no renaming; the tickets in the set below head (passed
 * without leaving the set: nobody refers to them, only their number counts towards LEFT_MAX) as
 * a number.
 */
byte lft;
byte lgar;

/* ---- the processes ---- */
byte ph[N];
byte ntok[N] = 1;         /* current token: TOK(p); a new one per round, re-enqueue and hand-over */
byte tkt[N] = NONE;       /* own ticket */
bit quiet[N];             /* gave up: releases as soon as it is served */
byte rounds[N];
byte hbs[N];
bit hold[N];              /* believes it holds ... */
byte rem[N];              /* ... for this many more ticks */
bit unc[N];               /* a write that may put its token in the item has an unknown outcome or a late copy */
byte na[N];               /* while unc: ticks since that first such write, or since a later answer that showed another token */
byte nh[N] = CLAIM;       /* ticks since the last answer that showed the item busy with another head */
byte srvT[N] = NONE;      /* its ticket, once a release or a skip served it unclaimed: an eventually consistent read may show that from then on, however old the copy */
/* the last view of the item */
byte vHead[N] = NONE;     /* NONE: no view */
byte vTail[N] = NONE;
byte vLive[N] = NONE;     /* NONE: none; LIVE_MINE: at most its own ticket; LIVE_ABOVE: above it */
byte sRvn[N];             /* record version watched, */
byte sAge[N];             /* ticks since it was first seen, */
byte sP[N];               /* and how long it may stay unchanged (its leaseMs, or CLAIM) */
byte vLft[N];             /* the `left` set shown, relative to vHead (bit i: ticket vHead + i) */
bit vPL[N];               /* the view shows head in `left` and no token: the left tickets at the head are to be passed */
bit lvDue[N];             /* gave up, its leave had no answer: it may send it again */
byte ndone;
#ifdef LIVE
bit moved[N];
byte nmoved;
#endif

/* ---- run budgets and checks ---- */
byte lossLeft = LOSS, dupLeft = DUPS, abandonLeft = ABANDONS, handLeft = HANDOVERS, takeLeft = TAKEOVERS;
bit headGranted;          /* the ticket now at head was granted already */
bit exhausted;

/* a delayed duplicate of a write (an SDK retry applied later) */
byte dOp, dP, dTok, dTkt;

/* scratch: only used inside one d_step, not part of the state */
hidden byte q, nr, res, tg, grem, ghand, wOp, wTok, wTkt, wL, nl, lm, lb;
hidden byte base;         /* see shiftTickets */
hidden byte byRead;       /* the view comes from a read (not from a write's answer) */
hidden byte mutual_exclusion, fencing_token_increases, one_grant_per_ticket, skip_stays_within_queue;
hidden byte bounds_large_enough, own_token_after_uncertain_write;
hidden byte left_ticket_never_held, left_ticket_costs_no_claim_lease;

#ifdef LIVE
#define MOVED if :: !moved[P] -> moved[P] = 1; nmoved++ :: else fi
#else
#define MOVED skip
#endif

/*
 * Holding by ticket: no token, head serves the ticket, and the ticket did not leave the line (a
 * ticket in `left` is never held: whatever write of its waiter lands late, whatever view it has).
 */
#ifdef BUG_LEAVE_HELD_BY_TICKET
#define HEAD_NOT_LEFT 1
#else
#define HEAD_NOT_LEFT ((lft & 1) == 0)
#endif
#define BY_TICKET(t) (itok == 0 && head == (t) && HEAD_NOT_LEFT)
#define IN_LEFT(t) ((t) != NONE && (t) >= head && (t) - head < 8 && ((lft >> ((t) - head)) & 1))

/* leave(ticket): only for a ticket still waiting (head below it) */
#ifdef BUG_LEAVE_AT_HEAD
#define LEAVE_COND(t) (head <= (t) && (t) < tail)
#define LEAVE_DEAD(t) ((t) < head)
#else
#define LEAVE_COND(t) (head < (t) && (t) < tail)
#define LEAVE_DEAD(t) ((t) <= head)
#endif

/*
 * Record versions. A new one is a value nobody has seen (a random value never repeats). Only
 * equality with the item's version matters, so after every step the versions are renamed:
 * the item's is 1, a process that remembers it has 1, one that remembers an older one has
 * STALE (an older version never comes back), one that remembers none has 0.
 */
#define STALE 2
inline newRvn() {
  rvn = (rvn == 3 -> 4 : 3)
}

/*
 * Tickets are kept relative to the smallest one anybody still refers to (only differences and
 * order matter); base is that offset, for the traces only.
 */
inline shiftTickets() {
  nr = head;
  for (q : 0 .. N - 1) {
    if :: tkt[q] != NONE && tkt[q] < nr -> nr = tkt[q] :: else fi;
    if :: vHead[q] != NONE && vHead[q] < nr -> nr = vHead[q] :: else fi
  }
  if :: dOp != 0 && dTkt != NONE && dTkt < nr -> nr = dTkt :: else fi;
  if
  :: nr > 0 ->
     base = base + nr; head = head - nr; tail = tail - nr;
     if :: live != NONE -> live = live - nr :: else fi;
     for (q : 0 .. N - 1) {
       if :: tkt[q] != NONE -> tkt[q] = tkt[q] - nr :: else fi;
       if :: srvT[q] != NONE -> srvT[q] = srvT[q] - nr :: else fi;
       if :: vHead[q] != NONE -> vHead[q] = vHead[q] - nr; vTail[q] = vTail[q] - nr :: else fi
     }
     if :: dOp != 0 && dTkt != NONE -> dTkt = dTkt - nr :: else fi
  :: else
  fi
}

inline canon() {
  for (q : 0 .. N - 1) {
    if
    :: srvT[q] != tkt[q] -> srvT[q] = NONE
    :: else
    fi;
    if
    :: tkt[q] != NONE && BY_TICKET(tkt[q]) -> srvT[q] = tkt[q]
    :: else
    fi;
    /* nobody believes it holds (or, served quietly, releases) by a ticket in `left` */
    left_ticket_never_held = !((hold[q] && rem[q] > 0 || ph[q] == RELP) && itok != TOK(q) && IN_LEFT(tkt[q]));
    assert(left_ticket_never_held)
  };
  /* a late copy of a leave whose ticket head reached can never land */
  if
  :: dOp == W_LEAVE && LEAVE_DEAD(dTkt) -> dOp = 0; dP = 0; dTok = 0; dTkt = 0
  :: else
  fi;
  shiftTickets();
  for (q : 0 .. N - 1) {
    if
    :: sRvn[q] == rvn -> sRvn[q] = 1
    :: sRvn[q] != rvn && sRvn[q] != 0 ->
       sRvn[q] = STALE;
#ifndef BUG_SKIP_NO_RVN
       /* a skip or roll-call on a stale version fails (it only reads): when it may be sent no longer matters */
       if
       :: sP[q] > 0 -> sP[q] = 1; sAge[q] = 1
       :: else -> sAge[q] = 0
       fi
#else
       skip
#endif
    :: else
    fi
  };
  rvn = 1
}

inline headMoves() {
  headGranted = 0; live = NONE; fd++; newRvn()
}

/* nl: the size of the `left` set */
inline countLeft() {
  nl = lgar; lb = lft;
  do
  :: lb != 0 -> nl = nl + (lb & 1); lb = lb >> 1
  :: else -> break
  od
}

/* tailTok matters only while a retry of that enqueue can still come */
inline tidyTailTok() {
  res = 0;
  for (q : 0 .. N - 1) {
    if
    :: ph[q] == ENQR && TOK(q) == tailTok -> res = 1
    :: else
    fi
  }
  if
  :: res == 0 && !(dOp == W_ENQ && dTok == tailTok) -> tailTok = 0
  :: else
  fi
}

/* the writes a delayed duplicate may repeat (arguments in wOp, wTok, wTkt, wL); res: 1 applied */
inline applyW() {
  res = 0;
  if
  :: wOp == W_FREE ->
     if
     :: itok == 0 && head == tail ->
        itok = wTok; tail++; fd++; ilease = wL; live = NONE; newRvn(); res = 1;
        lft = 0; lgar = 0;   /* a free acquire removes `left` */
#ifdef FIX_FREE_SETS_TAILTOKEN
        tailTok = wTok; tidyTailTok(); res = 1
#else
        skip
#endif
     :: else
     fi
  :: wOp == W_ENQ ->
     if
     :: tailTok != wTok -> tail++; tailTok = wTok; res = 1
     :: else
     fi
  :: wOp == W_HB ->
     if
     :: itok == wTok || BY_TICKET(wTkt) -> itok = wTok; ilease = wL; live = NONE; newRvn(); res = 1
     :: else
     fi
  :: wOp == W_LEAVE ->
     /* ADD left {ticket}: keeps the record version */
     countLeft();
     if
     :: LEAVE_COND(wTkt) && nl < LEFT_MAX ->
        bounds_large_enough = (wTkt - head < 8);
        assert(bounds_large_enough);
        lft = lft | (1 << (wTkt - head)); res = 1
     :: else
     fi
  fi
}

inline release() {
  if
  :: itok == TOK(P) || BY_TICKET(tkt[P]) ->
     head++; itok = 0; ilease = 0; headMoves(); res = 1;
     /* `left` is not changed: a left ticket held by a token (see actSkip) stays in it, below head */
     if :: lft & 1 -> lgar++ :: else fi;
     lft = lft >> 1
  :: else -> res = 0
  fi
}

/* a write that may put this token in the item, with no answer or with a late copy on its way */
inline uncertain() {
  if
  :: !unc[P] -> unc[P] = 1; na[P] = 0
  :: else
  fi
}

/* the end of a write's line in a trace */
inline report(lost) {
  if
  :: res && !lost -> printf(": applied\n")
  :: res && lost -> printf(": applied, answer lost\n")
  :: !res && !lost -> printf(": condition failed\n")
  :: else -> printf(": condition failed, answer lost\n")
  fi
}

inline makeDup(dup) {
  if
  :: dup -> dupLeft--; dOp = wOp; dP = P; dTok = wTok; dTkt = wTkt
  :: else
  fi
}

/* a read, or the answer of a write (the item as it is now) */
inline see() {
  vHead[P] = head; vTail[P] = tail; vLft[P] = lft;
  vPL[P] = (itok == 0 && head < tail && (lft & 1));
  /* only how the register compares with its own ticket matters */
  vLive[P] = (live == NONE || tkt[P] == NONE -> NONE : (live <= tkt[P] -> LIVE_MINE : LIVE_ABOVE));
  if
  :: rvn != sRvn[P] -> sRvn[P] = rvn; sAge[P] = 0; sP[P] = (itok != 0 -> ilease : UNCLAIMED_P)
  :: else
  fi;
  if
  :: itok != TOK(P) && unc[P] -> na[P] = 0
  :: else
  fi;
  /* busy, and not with this process's ticket at its head (or with it, left): no later ticket of it is head yet */
  if
  :: itok != TOK(P) && head != tail && (head != tkt[P] || !HEAD_NOT_LEFT) -> nh[P] = 0
  :: else
  fi
}

inline forgetView() {
  sRvn[P] = 0; sAge[P] = 0; sP[P] = 0; vHead[P] = NONE; vTail[P] = NONE; vLive[P] = NONE; vLft[P] = 0; vPL[P] = 0
}

inline finish() {
  ph[P] = DONE; hold[P] = 0; rem[P] = 0; unc[P] = 0; na[P] = 0; nh[P] = 0; quiet[P] = 0; tkt[P] = NONE; lvDue[P] = 0;
  hbs[P] = 0; ntok[P] = 0; rounds[P] = 0;
  forgetView();
#ifdef LIVE
  if :: moved[P] -> moved[P] = 0; nmoved-- :: else fi;
#endif
  ndone++
}

inline outOfBounds() {
  printf("MSC: p%d out of tickets or tokens (model bound)\n", P);
  exhausted = 1;
#ifdef LIVE
  bounds_large_enough = 0;
  assert(bounds_large_enough);
#endif
  finish()
}

inline newToken() {
  if
  :: ntok[P] >= TOKS -> outOfBounds()
  :: else -> ntok[P]++; unc[P] = 0; na[P] = 0; ph[P] = IDLE
  fi
}

inline clearRound() {
  hold[P] = 0; rem[P] = 0; quiet[P] = 0; tkt[P] = NONE; hbs[P] = 0; lvDue[P] = 0
}

inline nextRound() {
  rounds[P]++;
  if
  :: rounds[P] >= ROUNDS -> finish()
  :: else -> newToken()
  fi
}

inline roundEnd() {
  clearRound(); nextRound()
}

/* this process starts to believe it holds the lock, for grem ticks, with the item's fence */
inline grant() {
  for (q : 0 .. N - 1) {
    mutual_exclusion = (q == P || hold[q] == 0 || rem[q] == 0);
    assert(mutual_exclusion)
  }
  fencing_token_increases = (fd > 0);
  assert(fencing_token_increases);
  fd = 0;
  if
  :: !ghand ->
     one_grant_per_ticket = (headGranted == 0 && tkt[P] == head);
     assert(one_grant_per_ticket);
     headGranted = 1
  :: else
  fi;
  printf("MSC: p%d HOLDS the lock (ticket %d), lease %d ticks\n", P, tkt[P] + base, grem);
  hold[P] = 1; rem[P] = grem; hbs[P] = 0; ph[P] = HOLD; unc[P] = 0; na[P] = 0;
  forgetView()
}

#ifdef BUG_LEASE_FROM_HEAD_READ
/* broken: the lease of a promoted head counts from the read that showed it head */
#define PROMO_REM (byRead -> LCQ(P) : LCQ(P) - nh[P])
#else
#define PROMO_REM (LCQ(P) - nh[P])
#endif

/* what the last view means for this process */
inline resolve() {
  if
  :: itok == TOK(P) ->
     /* its own token is in the item (a write whose answer was lost, or a late duplicate) */
     own_token_after_uncertain_write = unc[P];
     assert(own_token_after_uncertain_write);
     tkt[P] = head;
     if
     :: quiet[P] -> ph[P] = RELP
     :: !quiet[P] && LL(P) > na[P] -> grem = LL(P) - na[P]; ghand = 0; grant()
     :: else -> ph[P] = CLAIMP
     fi
  :: itok != TOK(P) && tkt[P] != NONE && BY_TICKET(tkt[P]) ->
     printf("MSC: p%d sees its ticket %d at head, unclaimed\n", P, tkt[P] + base);
     if
     :: quiet[P] -> ph[P] = RELP
     :: !quiet[P] && PROMO_REM > 0 -> grem = PROMO_REM; ghand = 0; grant()
     :: else -> ph[P] = CLAIMP
     fi
  :: itok != TOK(P) && tkt[P] != NONE && head > tkt[P] ->
     printf("MSC: p%d sees its ticket %d skipped (head %d)\n", P, tkt[P] + base, head + base);
     if
     :: quiet[P] -> roundEnd()
     :: else -> tkt[P] = NONE; newToken()
     fi
  :: else ->
     /* (its ticket at head but in `left`: not served, the left tickets at the head are passed) */
     if
     :: tkt[P] != NONE -> ph[P] = WAIT
     :: else -> ph[P] = IDLE
     fi
  fi
}

#ifdef BUG_SKIP_NO_RVN
/* broken: the skip checks head and tail as seen, not the record version */
#define SKIP_COND (head == vHead[P] && tail == vTail[P])
#else
#define SKIP_COND (rvn == sRvn[P] && tail == vTail[P])
#endif

#define ROLL_COND (rvn == sRvn[P] && head == vHead[P] && (live == NONE || live > tkt[P]))

#define WATCHED (sP[P] > 0 && vHead[P] != vTail[P])
#ifdef FINDING_TICKET_MISATTRIBUTION
#define QUEUED (vHead[P] <= tkt[P])
#else
#define QUEUED (vHead[P] < tkt[P])
#endif
#define CAN_ROLL (WATCHED && 2 * sAge[P] >= sP[P] && QUEUED && (vLive[P] == NONE || vLive[P] > tkt[P]))
#define CAN_SKIP_T (WATCHED && sAge[P] >= sP[P] && vLive[P] != NONE && vLive[P] <= tkt[P])
#define CAN_SKIP_U (WATCHED && sAge[P] >= sP[P])

/* a view that shows the head left (and no token) asks for the pass of the left tickets first */
#ifdef BUG_SKIP_BEFORE_PASS_LEFT
/* broken: the pass of a silent head is considered first (a left head costs a claim lease) */
#define SKIP_LEFT_OK 1
#else
#define SKIP_LEFT_OK (!vPL[P])
#endif

#ifdef LIVE
/* a process that keeps running does what its view asks for (see README) */
#define READ_OK (ph[P] == WAIT && !vPL[P] && !CAN_ROLL && !CAN_SKIP_T)
#define SKIP_OK (ph[P] == WAIT && SKIP_LEFT_OK && CAN_SKIP_T)
#else
#define READ_OK (ph[P] == IDLE || ph[P] == WAIT)
#define SKIP_OK ((ph[P] == WAIT && CAN_SKIP_T || ph[P] == IDLE && CAN_SKIP_U) && SKIP_LEFT_OK)
#endif
#define ROLL_OK (ph[P] == WAIT && !vPL[P] && CAN_ROLL)
#define PL_OK (vPL[P] && (ph[P] == IDLE || ph[P] == WAIT || ph[P] == FOLP))
#define GIVEUP_OK (ph[P] == WAIT && !quiet[P] && abandonLeft > 0)
#define RELEAVE_OK (ph[P] == WAIT && lvDue[P])
#define TAKEOVER_OK (ph[P] == WAIT && quiet[P] && !unc[P] && takeLeft > 0 && rounds[P] + 1 < ROUNDS && ntok[P] < TOKS)

#define FREE_OK (ph[P] == IDLE && vHead[P] == vTail[P] && tail < MAXT)
#define ENQ_OK ((ph[P] == IDLE && vHead[P] != vTail[P] && !vPL[P] || ph[P] == ENQR) && tail < MAXT)
#define LOSS_OK(k) (lossLeft > 0 && ((LOSSES >> k) & 1))
#define DUP_OK (dupLeft > 0 && dOp == 0)

/* 1. free acquire (tried when the last view showed the lock free) */
inline actFree(lost, dup) {
  MOVED;
  wOp = W_FREE; wTok = TOK(P); wTkt = NONE; wL = LL(P);
  applyW();
  makeDup(dup);
  if :: lost || dup -> uncertain() :: else fi;
  printf("MSC: p%d free acquire, token %d", P, wTok); report(lost);
  if
  :: lost -> lossLeft--
  :: !lost && res -> tkt[P] = head; grem = LL(P); ghand = 0; grant()
  :: else -> see(); resolve()
  fi
}

/* 2. enqueue (when the last view showed it busy), and its retry after a lost answer */
inline actEnq(lost, dup) {
  MOVED;
  wOp = W_ENQ; wTok = TOK(P); wTkt = NONE; wL = 0;
  applyW();
  makeDup(dup);
  printf("MSC: p%d enqueue, token %d, tail now %d", P, wTok, tail + base); report(lost);
  if
  :: lost -> lossLeft--; ph[P] = ENQR
  :: else ->
     tkt[P] = tail - 1; ph[P] = WAIT;
     printf("MSC: p%d has ticket %d\n", P, tkt[P] + base);
#ifdef BUG_ENQ_HEAD_FROM_SEND
     /* broken: an enqueue that finds the item free counts the lease from its own send */
     nh[P] = 0;
#endif
     see(); resolve()
  fi;
  tidyTailTok()
}

/* 8. roll-call */
inline actRoll(lost) {
  MOVED;
  if
  :: ROLL_COND -> live = tkt[P]; res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d roll-call, ticket %d", P, tkt[P] + base); report(lost);
  if
  :: lost -> lossLeft--
  :: else -> see(); resolve()
  fi
}

/* 7. skip: the watched record version stayed the same for its whole lease */
inline actSkip(lost) {
  MOVED;
  res = 0;
  if
  :: SKIP_COND ->
     /*
      * The head passed is silent for a whole lease as watched, never an unclaimed left ticket:
      * those are passed at once (actPassLeft). In a liveness run (no crash, no long pause) no left
      * head is passed this way at all.
      */
#ifdef LIVE
     left_ticket_costs_no_claim_lease = ((lft & 1) == 0);
#else
     left_ticket_costs_no_claim_lease = !(itok == 0 && (lft & 1));
#endif
     assert(left_ticket_costs_no_claim_lease);
     tg = (live != NONE -> live : (tkt[P] != NONE -> tkt[P] : head + 1));
     /* and the left tickets its view shows right after go with it (never its own ticket) */
     do
     :: tg < vTail[P] && tg != tkt[P] && tg >= vHead[P] && tg - vHead[P] < 8 && ((vLft[P] >> (tg - vHead[P])) & 1) -> tg++
     :: else -> break
     od;
     skip_stays_within_queue = (tg <= tail && tg > head);
     assert(skip_stays_within_queue);
     /*
      * The left tickets passed that its view shows leave the set, and so do those below head (at
      * the version watched the view shows them all); tickets that left since its view stay in the
      * set, below head.
      */
     lm = (1 << (tg - head)) - 1;
     lb = lft & lm & (~vLft[P]);
     lgar = 0;
     do
     :: lb != 0 -> lgar = lgar + (lb & 1); lb = lb >> 1
     :: else -> break
     od;
     lft = lft >> (tg - head);
     head = tg; headMoves();
     if
     :: tkt[P] != NONE && tg == tkt[P] -> itok = TOK(P); ilease = LL(P); res = 2
     :: else -> itok = 0; ilease = 0; res = 1
     fi
  :: else
  fi;
  printf("MSC: p%d skip, head now %d", P, head + base); report(lost);
  if
  :: lost -> lossLeft--; uncertain()
  :: !lost && res == 2 && quiet[P] -> ph[P] = RELP
  :: !lost && res == 2 && !quiet[P] -> grem = LL(P); ghand = 0; grant()
  :: else -> see(); resolve()
  fi
}

/* 9. give up: leave the line (LockStore.leave), and its retry after a lost answer */
inline actLeave(lost, dup) {
  MOVED;
  quiet[P] = 1; lvDue[P] = 0;
  wOp = W_LEAVE; wTok = 0; wTkt = tkt[P]; wL = 0;
  applyW();
  makeDup(dup);
  printf("MSC: p%d leaves the line, ticket %d", P, tkt[P] + base); report(lost);
  if
  :: lost -> lossLeft--; lvDue[P] = 1     /* quiet meanwhile: applied or not, it cannot tell */
  :: !lost && res -> roundEnd()           /* out of the line: never acts again for that ticket */
  :: else -> see(); resolve()             /* refused: served (it releases at once), passed, or the set full (kept quietly) */
  fi
}

/*
 * The pass's condition: head is the one its view showed, no token, every ticket passed is in
 * `left` (lm: the mask of the tickets passed, relative to head), the target within tail.
 */
#if defined(BUG_PASS_LEFT_NO_HEAD_CHECK)
/* broken: conditioned on no token only (the head and the tickets passed are not checked) */
#define PASS_LEFT_COND (itok == 0 && tail >= tg)
#elif defined(DROP_PASS_LEFT_NO_TOKEN)
/* without `no token` (verifies: implied by the head seen and a left ticket never held) */
#define PASS_LEFT_COND (head == vHead[P] && tail >= tg && (lft & lm) == lm)
#elif defined(DROP_PASS_LEFT_IN_LEFT)
/* without `every ticket passed in left` (verifies: implied by the head seen) */
#define PASS_LEFT_COND (head == vHead[P] && itok == 0 && tail >= tg)
#else
#define PASS_LEFT_COND (head == vHead[P] && itok == 0 && tail >= tg && (lft & lm) == lm)
#endif

/* 10. pass of the left tickets at the head (LockStore.passLeft), from its view */
inline actPassLeft(lost) {
  MOVED;
  /* the run of left tickets from the head shown, up to the first ticket its view does not show left */
  tg = vHead[P];
  do
  :: tg < vTail[P] && tg - vHead[P] < 8 && ((vLft[P] >> (tg - vHead[P])) & 1) -> tg++
  :: else -> break
  od;
  lm = (1 << (tg - vHead[P])) - 1;
  if
  :: PASS_LEFT_COND ->
     skip_stays_within_queue = (tg <= tail && tg > head);
     assert(skip_stays_within_queue);
     /* the passed tickets leave the set; the fencing counter stays (nobody held them) */
     lft = lft >> (tg - head); head = tg; headGranted = 0; live = NONE;
#ifndef BUG_PASS_LEFT_KEEPS_RVN
     newRvn();
#endif
     res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d passes the left tickets at head %d, head now %d", P, vHead[P] + base, head + base); report(lost);
  if
  :: lost -> lossLeft--
  :: else
  fi;
  if
  :: ph[P] == FOLP -> forgetView(); nextRound()   /* the release's follow-up: whatever the answer */
  :: ph[P] != FOLP && !lost -> see(); resolve()
  :: else
  fi
}

/* 3./4. claim of a head (or of its own token) without a valid lease */
inline actClaim(lost, dup) {
  MOVED;
  wOp = W_HB; wTok = TOK(P); wTkt = tkt[P]; wL = LL(P);
  applyW();
  makeDup(dup);
  if :: lost || dup -> uncertain() :: else fi;
  printf("MSC: p%d claim, ticket %d", P, tkt[P] + base); report(lost);
  if
  :: lost -> lossLeft--; ph[P] = WAIT
  :: !lost && res -> tkt[P] = head; grem = LL(P); ghand = 0; grant()
  :: else -> see(); resolve()
  fi
}

/* 4. heartbeat (also the claim of a promoted head); only while the lease runs */
inline actHeartbeat(lost, dup) {
  MOVED;
  hbs[P]++;
  wOp = W_HB; wTok = TOK(P); wTkt = tkt[P]; wL = LL(P);
  applyW();
  makeDup(dup);
  printf("MSC: p%d heartbeat", P); report(lost);
  if
  :: lost -> lossLeft--          /* the lease it had still runs */
  :: !lost && res -> rem[P] = LL(P)
  :: else -> printf("MSC: p%d lost the lock\n", P); roundEnd()
  fi
}

active [N] proctype proc() {
  do
  :: ph[P] == DONE -> break

  /* strongly consistent read */
  :: d_step {
       READ_OK ->
       MOVED;
       printf("MSC: p%d reads: head %d, tail %d, token %d\n", P, head + base, tail + base, itok);
       byRead = 1; see(); resolve(); byRead = 0; canon()
     }

  :: d_step { FREE_OK -> actFree(0, 0); canon() }
  :: d_step { FREE_OK && LOSS_OK(0) -> actFree(1, 0); canon() }
  :: d_step { FREE_OK && DUP_OK -> actFree(0, 1); canon() }
  :: d_step { FREE_OK && LOSS_OK(0) && DUP_OK -> actFree(1, 1); canon() }

  :: d_step { ENQ_OK -> actEnq(0, 0); canon() }
  :: d_step { ENQ_OK && LOSS_OK(1) -> actEnq(1, 0); canon() }
  :: d_step { ENQ_OK && DUP_OK -> actEnq(0, 1); canon() }
  :: d_step { ENQ_OK && LOSS_OK(1) && DUP_OK -> actEnq(1, 1); canon() }
  :: d_step { (ph[P] == IDLE || ph[P] == ENQR) && tail >= MAXT -> MOVED; outOfBounds(); canon() }

  :: d_step { ROLL_OK -> actRoll(0); canon() }
  :: d_step { ROLL_OK && LOSS_OK(2) -> actRoll(1); canon() }

  :: d_step { SKIP_OK -> actSkip(0); canon() }
  :: d_step { SKIP_OK && LOSS_OK(3) -> actSkip(1); canon() }

  :: d_step { PL_OK -> actPassLeft(0); canon() }
  :: d_step { PL_OK && LOSS_OK(7) -> actPassLeft(1); canon() }

  /*
   * eventually consistent read: it may show the item as it was at any time since this ticket
   * was served. It shows it served: the lease counts from the last strongly consistent answer
   * that showed another head (nh), never from this read.
   */
  :: d_step {
       ph[P] == WAIT && tkt[P] != NONE && srvT[P] == tkt[P] ->
       MOVED;
       printf("MSC: p%d eventually consistent read: its ticket %d served (perhaps an old copy)\n", P, tkt[P] + base);
       if
       :: quiet[P] -> ph[P] = RELP
       :: !quiet[P] && PROMO_REM > 0 -> grem = PROMO_REM; ghand = 0; grant()
       :: else -> ph[P] = CLAIMP
       fi;
       canon()
     }
#ifdef BUG_EVENTUAL_REFRESHES_VIEW
  /* broken: an old copy from before its ticket was served, showing another head, counts as a recent answer */
  :: d_step {
       ph[P] == WAIT && tkt[P] != NONE && srvT[P] == tkt[P] && nh[P] > 0 ->
       MOVED;
       printf("MSC: p%d eventually consistent read: an old copy shows another head (counted as recent)\n", P);
       nh[P] = 0;
       canon()
     }
#endif

  /* 9. give up: it leaves the line; refused or unanswered, the ticket runs on quietly */
  :: d_step { GIVEUP_OK -> abandonLeft--; printf("MSC: p%d gives up\n", P); actLeave(0, 0); canon() }
  :: d_step { GIVEUP_OK && LOSS_OK(6) -> abandonLeft--; printf("MSC: p%d gives up\n", P); actLeave(1, 0); canon() }
  :: d_step { GIVEUP_OK && DUP_OK -> abandonLeft--; printf("MSC: p%d gives up\n", P); actLeave(0, 1); canon() }
  :: d_step { RELEAVE_OK -> actLeave(0, 0); canon() }
  :: d_step { RELEAVE_OK && LOSS_OK(6) -> actLeave(1, 0); canon() }

  /* a later caller of this process takes over the ticket of a caller that gave up (RemoteAcquisition.checkCaller) */
  :: d_step {
       TAKEOVER_OK ->
       MOVED; takeLeft--; quiet[P] = 0; lvDue[P] = 0; rounds[P]++; ntok[P]++;
       printf("MSC: p%d: its next caller (token %d) takes over ticket %d\n", P, TOK(P), tkt[P] + base);
       canon()
     }

  :: d_step { ph[P] == CLAIMP -> actClaim(0, 0); canon() }
  :: d_step { ph[P] == CLAIMP && LOSS_OK(4) -> actClaim(1, 0); canon() }
  :: d_step { ph[P] == CLAIMP && DUP_OK -> actClaim(0, 1); canon() }

  :: d_step { ph[P] == HOLD && rem[P] > 0 && hbs[P] < HBS -> actHeartbeat(0, 0); canon() }
  :: d_step { ph[P] == HOLD && rem[P] > 0 && hbs[P] < HBS && LOSS_OK(5) -> actHeartbeat(1, 0); canon() }
  :: d_step { ph[P] == HOLD && rem[P] > 0 && hbs[P] < HBS && DUP_OK -> actHeartbeat(0, 1); canon() }

  /* 5. release (also the best-effort release of a holder whose lease ran out) */
  :: d_step {
       ph[P] == HOLD || ph[P] == RELP ->
       MOVED;
       hold[P] = 0;
       release();
       printf("MSC: p%d release, ticket %d", P, tkt[P] + base); report(0);
       if
       :: res && itok == 0 && head < tail && (lft & 1) ->
          /* its answer shows head serving a left ticket: it passes the left tickets next (LockStore.release) */
          clearRound(); ph[P] = FOLP;
          vHead[P] = head; vTail[P] = tail; vLft[P] = lft; vPL[P] = 1
       :: else -> roundEnd()
       fi;
       canon()
     }

  /* 6. local hand-over to the next caller of the same process */
  :: d_step {
       ph[P] == HOLD && rem[P] > 0 && handLeft > 0 && rounds[P] + 1 < ROUNDS && ntok[P] < TOKS ->
       MOVED;
       handLeft--;
       if
       :: itok == TOK(P) || BY_TICKET(tkt[P]) ->
          itok = TOK(P) + 1; fd++; ilease = LL(P); newRvn();
          rounds[P]++; ntok[P]++;
          printf("MSC: p%d hands over to its token %d\n", P, TOK(P));
          grem = LL(P); ghand = 1; grant()
       :: else -> printf("MSC: p%d hand-over failed\n", P); roundEnd()
       fi;
       canon()
     }
  od
}

#ifdef LIVE
/* a process that keeps running takes at least one step between two ticks */
#define CLOCK_MAY_TICK (ndone < N && nmoved + ndone == N)
#else
#define CLOCK_MAY_TICK (ndone < N)
#endif

/* true time: every tick, leases run down and watch times grow, for every process alike */
active proctype clock() {
end:
  do
  :: d_step {
       CLOCK_MAY_TICK ->
       for (q : 0 .. N - 1) {
         if :: rem[q] > 0 -> rem[q]-- :: else fi;
         if :: unc[q] && na[q] < LL(q) -> na[q]++ :: else fi;
         if :: ph[q] != DONE && nh[q] < LCQ(q) -> nh[q]++ :: else fi;
         if :: sAge[q] < sP[q] -> sAge[q]++ :: else fi
#ifdef LIVE
         ; moved[q] = 0
#endif
       }
#ifdef LIVE
       ; nmoved = 0
#endif
       ; printf("MSC: tick\n")
     }
  od
}

/* the network: a delayed duplicate of a write is applied later (or never) */
active proctype net() {
end:
  do
  :: d_step {
       dOp != 0 && (dOp == W_HB || dOp == W_LEAVE || tail < MAXT) ->
       wOp = dOp; wTok = dTok; wTkt = dTkt; wL = LL(dP);
       applyW();
       if
       :: dOp == W_FREE -> printf("MSC: late copy of p%d's free acquire, token %d", dP, dTok)
       :: dOp == W_ENQ -> printf("MSC: late copy of p%d's enqueue, token %d, tail now %d", dP, dTok, tail + base)
       :: dOp == W_LEAVE -> printf("MSC: late copy of p%d's leave, ticket %d", dP, dTkt + base)
       :: else -> printf("MSC: late copy of p%d's heartbeat/claim, token %d", dP, dTok)
       fi;
       report(0);
       dOp = 0; dP = 0; dTok = 0; dTkt = 0;
       tidyTailTok();
       canon()
     }
  od
}

#ifdef LIVE
ltl every_waiter_served { <> (ndone == N) }
#endif
