/*
 * nestjs-dynamo-lock: readers and writers on one lock item (issue 29), for SPIN. What is
 * modelled, the bounds and every abstraction: README.md next to this file ("Readers and
 * writers"). Run it with model/run.sh.
 *
 * Writers are the mutex of waiting.pml, reduced to what a reader meets: the free acquire, the
 * ticket line (enqueue), promotion (a release serves the next ticket), the claim of a promoted
 * head, heartbeats, release, the pass of a holder (or group) whose record version stayed
 * unchanged for its lease, or of a head that never claims for a claim lease. Readers never take
 * tickets: start (the free acquire of a group), join, heartbeat, release (not last / last), and
 * the pass of a dead reader entry. One process = one lock client with one caller at a time.
 *
 * Every action is one atomic step (d_step): a write is applied as it is sent and its answer comes
 * back in the same step, or is lost. Time: a clock process ticks; every process counts leases and
 * watches in ticks. A process not scheduled while the clock ticks is paused (safety runs: for as
 * long as the search likes, so a pause past a lease and a crash are covered).
 *
 * Configuration macros (defaults below):
 *   NW NR       writers (1 or 2), readers (1 or 2); writers are processes 0 .. NW-1
 *   WROUNDS     acquisitions each writer wants
 *   RROUNDS     acquisitions each reader wants (0: for ever, one after another)
 *   LW LR0 LR1  lease of the writers, of reader 0, of reader 1 (ticks)
 *   CLAIM       claim lease of an unclaimed head (ticks)
 *   HBS         heartbeats per hold            MAXT  ticket bound (tail never exceeds it)
 *   LOSS        lost answers (a reader's start, join or release) in a run
 *   DUPS        late copies of a reader's start or join in a run
 *   CRASHES     readers crashing while they hold (liveness runs; in safety runs a pause is one)
 *   WCRASHES    writers crashing while they hold or wait in the line (liveness runs)
 *   LIVE        liveness run: LIVE_READERS checks every reader, else every writer, is served
 *   COVER_READERS_OVERLAP  asserts that two readers never hold at once (must fail)
 *   Broken variants, which must fail: BUG_RW_JOIN_IGNORES_LINE (liveness),
 *   BUG_RW_JOIN_WHILE_WRITER, BUG_RW_PASS_WITHOUT_VERSION, BUG_RW_HEARTBEAT_KEEPS_RVN,
 *   BUG_RW_GROUP_LEASE_NOT_MAX (safety).
 *   BUG_RW_READER_NEVER_PASSES_WRITER: (broken) a waiting reader does NOT pass a silent writer holder, or a head that never
 *   claims, with the mutex skip (target head + 1), as a process not in the line does (README).
 */

#ifndef NW
#define NW 1
#endif
#ifndef NR
#define NR 2
#endif
#ifndef WROUNDS
#define WROUNDS 1
#endif
#ifndef RROUNDS
#define RROUNDS 1
#endif
#ifndef TOKS
#define TOKS 3
#endif
#ifndef MAXT
#define MAXT 6
#endif
#ifndef LW
#define LW 3
#endif
#ifndef LR0
#define LR0 3
#endif
#ifndef LR1
#define LR1 3
#endif
#ifndef CLAIM
#define CLAIM 2
#endif
#ifndef HBS
#define HBS 1
#endif
#ifndef LOSS
#define LOSS 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef CRASHES
#define CRASHES 0
#endif
#ifndef WCRASHES
#define WCRASHES 0
#endif

#define NP (NW + NR)
#define NONE 255
#define RTOK 254          /* the group marker token = R (no writer token equals it) */

/* phases */
#define IDLE 0    /* wants the lock (a writer without a ticket; a reader polling) */
#define WAIT 1    /* writer: has a ticket, waits for its turn */
#define CLAIMP 2  /* must claim (heartbeat) before it holds: a promoted head, or a reader that found its entry after its lease */
#define HOLD 3    /* believes it holds the lock (for rem more ticks) */
#define DONE 4
#define RETRY 5   /* reader: the answer of its start or join was lost, it sends it again */
#define RELR 6    /* reader: the answer of its release was lost, it sends it again */
#define CRASHED 7

/* a reader's writes that a late copy may repeat */
#define W_START 1
#define W_JOIN 2

#define LRD(i) ((i) == 0 -> LR0 : LR1)
#define LP(p) ((p) < NW -> LW : LRD((p) - NW))
#define LCQ (LW < CLAIM -> LW : CLAIM)
#define TOK(p) ((p) * TOKS + ntok[p])
#define P _pid
#define RI (_pid - NW)

/* ---- the lock item ---- */
byte head, tail;          /* ticket now served; next ticket to issue (free: head == tail) */
byte itok;                /* token: 0 absent, RTOK a group, else a writer's */
byte ilease;              /* leaseMs (a group's: the largest of its members') */
byte rvn = 1;             /* record version, renamed after every step (see canon) */
/*
 * The fencing counter, as two bits: it is above every token granted so far (fA), above every
 * writer's token granted so far (fW). Only what the fencing property compares is kept.
 */
bit fA = 1, fW = 1;
/*
 * The readers map. Entry slots: slot i (i < NR) holds reader i's entry of its current
 * acquisition; slot GS a ghost: an entry of an older acquisition a late copy put back. Versions
 * live in V (0: absent), renamed after every step (only equality matters); el: the entry's lease.
 * V also holds the version a late copy carries (DVI) and what every reader last saw of every
 * slot (WI(r, s): the version whose watch runs, wAge ticks so far, wP the entry's lease).
 */
#define NS (NR + 1)
#define GS NR
#define DVI NS
#define WI(r, s) (NS + 1 + (r) * NS + (s))
#define WX(r, s) ((r) * NS + (s))
#define NV (NS + 1 + NR * NS)
#define VFRESH 31
#define VDEAD 30          /* a reader's record of a version no entry and no late copy carries any more */
byte V[NV];
byte el[NS];
byte wAge[NR * NS], wP[NR * NS];

/* ---- the processes ---- */
byte ph[NP];
byte ntok[NP] = 1;        /* writer: current token TOK(p) */
byte tkt[NP] = NONE;      /* writer: own ticket */
byte rounds[NP];
byte hbs[NP];
bit hold[NP];             /* believes it holds ... */
byte rem[NP];             /* ... for this many more ticks */
bit unc[NP];              /* reader: a start or join of this acquisition whose answer was lost, or with a late copy on its way */
byte na[NP];              /* ... ticks since its first send */
byte rk[NP];              /* reader: the write whose answer was lost (W_START, W_JOIN), */
byte uH[NP] = NONE, uT[NP] = NONE;  /* and the head and tail its join was conditioned on */
byte nh[NP] = CLAIM;      /* writer: ticks since the last answer that showed the item busy with another head */
/* the last view of the item */
byte vHead[NP] = NONE, vTail[NP] = NONE;
byte vK[NP];              /* the token shown: 0 none, 1 a group, 2 a writer's */
byte sRvn[NP], sAge[NP], sP[NP];  /* record version watched, ticks since first seen, how long it may stay (its leaseMs, or CLAIM) */
byte wdone, rdone, ncrash, rcrash;
#ifdef LIVE
bit moved[NP];
byte nmoved;
#endif

/* ---- run budgets ---- */
byte lossLeft = LOSS, dupLeft = DUPS, crashLeft = CRASHES, wcrashLeft = WCRASHES;
bit exhausted;

/* a late copy of a reader's start or join (an SDK retry applied later) */
byte dOp, dR, dL, dH, dT;
bit dCur;                 /* it is of its reader's current acquisition (else its entry is a ghost) */

/* scratch: only used inside one d_step, not part of the state */
hidden byte q, k, m, s0, nx, vv, hit, res, grem, nsz, slot;
hidden byte mp[32];
hidden byte writer_excludes_all, reader_excludes_writers, writer_token_above_all, reader_token_above_writers;
hidden byte never_two_readers, own_entry_after_uncertain_write, bounds_large_enough, skip_stays_within_queue;

#ifdef LIVE
#define MOVED if :: !moved[P] -> moved[P] = 1; nmoved++ :: else fi
#else
#define MOVED skip
#endif

#define BY_TICKET(t) (itok == 0 && head == (t))

#define STALE 2
inline newRvn() {
  rvn = (rvn == 3 -> 4 : 3)
}

inline fenceUp() {
  fA = 1; fW = 1
}

inline clearReaders() {
  for (k : 0 .. NS - 1) {
    V[k] = 0; el[k] = 0
  }
}

/* nsz: the number of entries */
inline countEntries() {
  nsz = 0;
  for (k : 0 .. NS - 1) {
    if :: V[k] != 0 -> nsz++ :: else fi
  }
}

/* the group lease: kept or raised by every reader write (broken: set to the writer's own) */
#ifdef BUG_RW_GROUP_LEASE_NOT_MAX
#define LEASE_UP(l) ilease = (l)
#else
#define LEASE_UP(l) if :: ilease < (l) -> ilease = (l) :: else fi
#endif

/* a release (or a pass) that ends the holder: serves the next ticket (the mutex release) */
inline releaseHead() {
  head++; itok = 0; ilease = 0; clearReaders(); fenceUp(); newRvn()
}

/*
 * Tickets are kept relative to the smallest one anybody still refers to (only differences and
 * order matter).
 */
inline shiftTickets() {
  /*
   * A view whose tail is below head can never match the item again: only whether it showed the
   * item free, a holder with no ticket waiting, or a line matters (and, for a writer, that its
   * ticket is behind it). It is moved up to just below head, so a process that takes no step
   * while others go round does not hold tickets down; so are the head and tail a lost join or a
   * late copy was conditioned on, once below head.
   */
  if
  :: head >= 3 ->
     for (q : 0 .. NP - 1) {
       if
       :: vHead[q] != NONE && vTail[q] + 1 < head && (tkt[q] == NONE || tkt[q] >= head) ->
          m = vTail[q] - vHead[q]; if :: m > 2 -> m = 2 :: else fi;
          vTail[q] = head - 1; vHead[q] = vTail[q] - m
       :: else
       fi;
       if :: uH[q] != NONE && uH[q] + 1 < head -> uH[q] = head - 1; uT[q] = head - 1 :: else fi;
       /* a holder's ticket passed (a reader passed it silent): below head it is never served again,
          so how far below does not matter; it no longer holds tickets down while readers go round */
       if :: q < NW && ph[q] == HOLD && tkt[q] != NONE && tkt[q] + 1 < head -> tkt[q] = head - 1 :: else fi
     }
     if :: dOp == W_JOIN && dH + 1 < head -> dH = head - 1; dT = head - 1 :: else fi
  :: else
  fi;
  nx = head;
  for (q : 0 .. NP - 1) {
    if :: tkt[q] != NONE && tkt[q] < nx -> nx = tkt[q] :: else fi;
    if :: vHead[q] != NONE && vHead[q] < nx -> nx = vHead[q] :: else fi;
    if :: uH[q] != NONE && uH[q] < nx -> nx = uH[q] :: else fi
  }
  if :: dOp == W_JOIN && dH < nx -> nx = dH :: else fi;
  if
  :: nx > 0 ->
     head = head - nx; tail = tail - nx;
     for (q : 0 .. NP - 1) {
       if :: tkt[q] != NONE -> tkt[q] = tkt[q] - nx :: else fi;
       if :: vHead[q] != NONE -> vHead[q] = vHead[q] - nx; vTail[q] = vTail[q] - nx :: else fi;
       if :: uH[q] != NONE -> uH[q] = uH[q] - nx; uT[q] = uT[q] - nx :: else fi
     }
     if :: dOp == W_JOIN -> dH = dH - nx; dT = dT - nx :: else fi
  :: else
  fi
}

/*
 * Entry versions: a new one is a value nobody has seen. What a reader saw of a slot matters only
 * while it equals that slot's entry or the version a late copy carries (it may put it back); any
 * other is a dead record (VDEAD). The rest are renamed in order of first appearance.
 */
inline canonVersions() {
  for (q : 0 .. NR - 1) {
    for (s0 : 0 .. NS - 1) {
      vv = V[WI(q, s0)];
      if
      :: vv != 0 && vv != VDEAD && vv != V[s0] && vv != V[DVI] ->
         /* a pass from this watch fails (its watch runs on: the reader does not know before it reads) */
         V[WI(q, s0)] = VDEAD
      :: vv == 0 -> wAge[WX(q, s0)] = 0; wP[WX(q, s0)] = 0
      :: else
      fi
    }
  }
  for (k : 0 .. 31) {
    mp[k] = 0
  }
  nx = 0;
  for (k : 0 .. NV - 1) {
    if :: V[k] != 0 && V[k] != VDEAD && mp[V[k]] == 0 -> nx++; mp[V[k]] = nx :: else fi
  }
  for (k : 0 .. NV - 1) {
    if :: V[k] != 0 && V[k] != VDEAD -> V[k] = mp[V[k]] :: else fi
  }
}

inline canon() {
  canonVersions();
  shiftTickets();
  for (q : 0 .. NP - 1) {
    if
    :: sRvn[q] == rvn -> sRvn[q] = 1
    :: sRvn[q] != rvn && sRvn[q] != 0 ->
       sRvn[q] = STALE;
       /* a pass on a stale version fails: when it may be sent no longer matters */
       if
       :: sP[q] > 0 -> sP[q] = 1; sAge[q] = 1
       :: else -> sAge[q] = 0
       fi
    :: else
    fi;
    /* a reader's lost write that can no longer land: its lease count is not needed */
    if
    :: q >= NW && unc[q] && ph[q] == IDLE && V[q - NW] == 0 && !(dOp != 0 && dR == q - NW && dCur) -> unc[q] = 0; na[q] = 0
    :: else
    fi
  };
  rvn = 1
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

/* a read, or the answer of a write: the view, and the watch of the record version */
inline see() {
  vHead[P] = head; vTail[P] = tail;
  vK[P] = (itok == 0 -> 0 : (itok == RTOK -> 1 : 2));
  if
  :: rvn != sRvn[P] -> sRvn[P] = rvn; sAge[P] = 0; sP[P] = (itok != 0 -> ilease : CLAIM)
  :: else
  fi;
  if
  :: P < NW && itok != TOK(P) && head != tail && head != tkt[P] -> nh[P] = 0
  :: else
  fi
}

inline forgetView() {
  sRvn[P] = 0; sAge[P] = 0; sP[P] = 0; vHead[P] = NONE; vTail[P] = NONE; vK[P] = 0
}

inline finish() {
  ph[P] = DONE; hold[P] = 0; rem[P] = 0; unc[P] = 0; na[P] = 0; tkt[P] = NONE; hbs[P] = 0; ntok[P] = 0;
  rounds[P] = 0; rk[P] = 0; uH[P] = NONE; uT[P] = NONE; nh[P] = 0;
  forgetView();
#ifdef LIVE
  if :: moved[P] -> moved[P] = 0; nmoved-- :: else fi;
#endif
  if :: P < NW -> wdone++ :: else -> rdone++ fi
}

inline crash() {
  printf("MSC: p%d crashes\n", P);
  ph[P] = CRASHED; ncrash++;
  if :: P >= NW -> rcrash++ :: else fi;
#ifdef LIVE
  if :: moved[P] -> moved[P] = 0; nmoved-- :: else fi
#endif
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

/* ================= writers (the mutex of waiting.pml) ================= */

inline newToken() {
  if
  :: ntok[P] >= TOKS -> outOfBounds()
  :: else -> ntok[P]++; ph[P] = IDLE
  fi
}

inline wRoundEnd() {
  hold[P] = 0; rem[P] = 0; tkt[P] = NONE; hbs[P] = 0;
  rounds[P]++;
  if
  :: rounds[P] >= WROUNDS -> finish()
  :: else -> newToken()
  fi
}

/* a writer starts to believe it holds, for grem ticks, with the item's fencing counter */
inline wgrant() {
  for (q : 0 .. NP - 1) {
    writer_excludes_all = (q == P || hold[q] == 0 || rem[q] == 0);
    assert(writer_excludes_all)
  }
  writer_token_above_all = fA;
  assert(writer_token_above_all);
  fA = 0; fW = 0;
  printf("MSC: p%d (writer) HOLDS the lock (ticket %d), lease %d ticks\n", P, tkt[P], grem);
  hold[P] = 1; rem[P] = grem; hbs[P] = 0; ph[P] = HOLD;
  forgetView()
}

/* the lease of a promoted head counts from the last answer that showed another head (waiting.pml) */
#define PROMO_REM (LCQ - nh[P])

inline wresolve() {
  if
  :: tkt[P] != NONE && BY_TICKET(tkt[P]) ->
     printf("MSC: p%d sees its ticket %d at head, unclaimed\n", P, tkt[P]);
     if
     :: PROMO_REM > 0 -> grem = PROMO_REM; wgrant()
     :: else -> ph[P] = CLAIMP
     fi
  :: tkt[P] != NONE && head > tkt[P] ->
     printf("MSC: p%d sees its ticket %d passed\n", P, tkt[P]);
     tkt[P] = NONE; newToken()
  :: else ->
     if
     :: tkt[P] != NONE -> ph[P] = WAIT
     :: else -> ph[P] = IDLE
     fi
  fi
}

#define W_WATCHED (sP[P] > 0 && vHead[P] != vTail[P] && vHead[P] < tkt[P])
#define W_CAN_SKIP (W_WATCHED && sAge[P] >= sP[P])
#ifdef LIVE
/* a process that keeps running does what its view asks for */
#define W_READ_OK (ph[P] == WAIT && !W_CAN_SKIP)
#else
#define W_READ_OK (ph[P] == IDLE || ph[P] == WAIT)
#endif
#define W_SKIP_OK (ph[P] == WAIT && W_CAN_SKIP)
#define W_FREE_OK (ph[P] == IDLE && vHead[P] == vTail[P] && tail < MAXT)
#define W_ENQ_OK (ph[P] == IDLE && vHead[P] != vTail[P] && tail < MAXT)

inline actFree() {
  MOVED;
  if
  :: itok == 0 && head == tail ->
     itok = TOK(P); tkt[P] = tail; tail++; ilease = LW; clearReaders(); fenceUp(); newRvn(); res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d (writer) free acquire, token %d", P, TOK(P)); report(0);
  if
  :: res -> grem = LW; wgrant()
  :: else -> see(); wresolve()
  fi
}

inline actEnq() {
  MOVED;
  tail++; tkt[P] = tail - 1; ph[P] = WAIT;
  printf("MSC: p%d (writer) enqueue: ticket %d\n", P, tkt[P]);
  see(); wresolve()
}

/* the mutex skip: the holder (a writer, or a whole group) or an unclaimed head stayed unchanged for its lease */
inline actSkip() {
  MOVED;
  if
  :: rvn == sRvn[P] && tail == vTail[P] ->
     skip_stays_within_queue = (tkt[P] > head && tkt[P] < tail);
     assert(skip_stays_within_queue);
     head = tkt[P]; clearReaders(); fenceUp(); newRvn();
     itok = TOK(P); ilease = LW; res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d (writer) skip to its ticket %d", P, tkt[P]); report(0);
  if
  :: res -> grem = LW; wgrant()
  :: else -> see(); wresolve()
  fi
}

inline actClaim() {
  MOVED;
  if
  :: itok == TOK(P) || BY_TICKET(tkt[P]) -> itok = TOK(P); ilease = LW; newRvn(); res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d (writer) claim, ticket %d", P, tkt[P]); report(0);
  if
  :: res -> grem = LW; wgrant()
  :: else -> see(); wresolve()
  fi
}

inline actWHeartbeat() {
  MOVED;
  hbs[P]++;
  if
  :: itok == TOK(P) || BY_TICKET(tkt[P]) -> itok = TOK(P); ilease = LW; newRvn(); res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d (writer) heartbeat", P); report(0);
  if
  :: res -> rem[P] = LW
  :: else -> printf("MSC: p%d lost the lock\n", P); wRoundEnd()
  fi
}

inline actWRelease() {
  MOVED;
  hold[P] = 0;
  if
  :: itok == TOK(P) || BY_TICKET(tkt[P]) -> releaseHead(); res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d (writer) release, ticket %d", P, tkt[P]); report(0);
  wRoundEnd()
}

active [NW] proctype writer() {
  do
  :: ph[P] == DONE || ph[P] == CRASHED -> break
  :: d_step {
       W_READ_OK ->
       MOVED;
       printf("MSC: p%d (writer) reads: head %d, tail %d, token %d\n", P, head, tail, itok);
       see(); wresolve(); canon()
     }
  :: d_step { W_FREE_OK -> actFree(); canon() }
  :: d_step { W_ENQ_OK -> actEnq(); canon() }
  :: d_step { ph[P] == IDLE && tail >= MAXT -> MOVED; outOfBounds(); canon() }
  :: d_step { W_SKIP_OK -> actSkip(); canon() }
  :: d_step { ph[P] == CLAIMP -> actClaim(); canon() }
  :: d_step { ph[P] == HOLD && rem[P] > 0 && hbs[P] < HBS -> actWHeartbeat(); canon() }
  :: d_step { ph[P] == HOLD -> actWRelease(); canon() }
  :: d_step { (ph[P] == HOLD && rem[P] > 0 || ph[P] == WAIT) && wcrashLeft > 0 -> wcrashLeft--; crash(); canon() }
  od
}

/* ================= readers ================= */

/* a reader starts to believe it holds, for grem ticks, with the group's fencing token */
inline rgrant() {
  for (q : 0 .. NW - 1) {
    reader_excludes_writers = (hold[q] == 0 || rem[q] == 0);
    assert(reader_excludes_writers)
  }
#ifdef COVER_READERS_OVERLAP
  for (q : NW .. NP - 1) {
    never_two_readers = (q == P || hold[q] == 0 || rem[q] == 0);
    assert(never_two_readers)
  }
#endif
  reader_token_above_writers = fW;
  assert(reader_token_above_writers);
  fA = 0;
  printf("MSC: p%d (reader) HOLDS the lock, lease %d ticks\n", P, grem);
  hold[P] = 1; rem[P] = grem; hbs[P] = 0; ph[P] = HOLD; unc[P] = 0; na[P] = 0; rk[P] = 0; uH[P] = NONE; uT[P] = NONE
}

inline rRoundEnd() {
  hold[P] = 0; rem[P] = 0; hbs[P] = 0; unc[P] = 0; na[P] = 0; rk[P] = 0; uH[P] = NONE; uT[P] = NONE;
  if :: dOp != 0 && dR == RI -> dCur = 0 :: else fi;
  rounds[P]++;
  if
  :: RROUNDS > 0 && rounds[P] >= RROUNDS -> finish()
  :: else -> if :: RROUNDS == 0 -> rounds[P] = 0 :: else fi; ph[P] = IDLE
  fi
}

/* a write whose entry may be in the item without its knowing (lost answer, or a late copy on its way) */
inline uncertain() {
  if
  :: !unc[P] -> unc[P] = 1; na[P] = 0
  :: else
  fi
}

/* what a reader sees: the view, and a watch of every other entry's version */
inline rsee() {
  see();
  for (s0 : 0 .. NS - 1) {
    if
    :: s0 != RI && V[s0] != 0 && V[WI(RI, s0)] != V[s0] ->
       V[WI(RI, s0)] = V[s0]; wAge[WX(RI, s0)] = 0; wP[WX(RI, s0)] = el[s0]
    :: else
    fi
  }
}

/* its own entry in the item: a start or join of its that had no answer (or a late copy) landed */
inline rresolve() {
  if
  :: V[RI] != 0 && (ph[P] == IDLE || ph[P] == RETRY) ->
     own_entry_after_uncertain_write = unc[P];
     assert(own_entry_after_uncertain_write);
     printf("MSC: p%d (reader) finds its own entry\n", P);
     if
     :: LRD(RI) > na[P] -> grem = LRD(RI) - na[P]; rgrant()
     :: else -> ph[P] = CLAIMP
     fi
  :: else ->
     if :: ph[P] == RETRY -> ph[P] = IDLE :: else fi
  fi
}

/* the join's condition: a group, head and tail as seen (no ticket waits), not in it yet */
#if defined(BUG_RW_JOIN_IGNORES_LINE)
#define JOIN_COND(h, t, sl) (itok == RTOK && V[sl] == 0)
#define VIEW_JOIN (vK[P] == 1)
#elif defined(BUG_RW_JOIN_WHILE_WRITER)
#define JOIN_COND(h, t, sl) (head == (h) && tail == (t) && V[sl] == 0)
#define VIEW_JOIN (vK[P] != 0 && vTail[P] == vHead[P] + 1)
#else
#define JOIN_COND(h, t, sl) (itok == RTOK && head == (h) && tail == (t) && V[sl] == 0)
#define VIEW_JOIN (vK[P] == 1 && vTail[P] == vHead[P] + 1)
#endif

#define START_COND (itok == 0 && head == tail)

/* the pass of a dead entry: as seen (its version), or broken: present */
#ifdef BUG_RW_PASS_WITHOUT_VERSION
#define PASS_COND(sl) (itok == RTOK && V[sl] != 0)
#else
#define PASS_COND(sl) (itok == RTOK && V[sl] != 0 && V[sl] == V[WI(RI, sl)])
#endif

#ifdef BUG_RW_HEARTBEAT_KEEPS_RVN
#define HB_RVN skip
#else
#define HB_RVN newRvn()
#endif

#define R_START_VIEW (vK[P] == 0 && vHead[P] == vTail[P])
#define R_START_OK (ph[P] == IDLE && R_START_VIEW && tail < MAXT)
#define R_JOIN_OK (ph[P] == IDLE && VIEW_JOIN)
/* a waiting reader: its view shows a group it cannot join; it watched entry sl unchanged for that entry's lease */
#define R_PASS_OK(sl) (ph[P] == IDLE && (sl) < NS && (sl) != RI && vK[P] == 1 && !VIEW_JOIN && \
                       V[WI(RI, sl)] != 0 && wP[WX(RI, sl)] > 0 && wAge[WX(RI, sl)] >= wP[WX(RI, sl)])
#define R_PASS_DUE (R_PASS_OK(0) || R_PASS_OK(1) || R_PASS_OK(2))
#ifndef BUG_RW_READER_NEVER_PASSES_WRITER
/* the mutex skip by a process not in the line: a writer holder or an unclaimed head, silent for its lease */
#define R_SKIP_OK (ph[P] == IDLE && vK[P] != 1 && vHead[P] != vTail[P] && vHead[P] != NONE && sP[P] > 0 && sAge[P] >= sP[P])
#else
#define R_SKIP_OK 0
#endif
#ifdef LIVE
#define R_READ_OK (ph[P] == IDLE && !R_START_OK && !R_JOIN_OK && !R_PASS_DUE && !R_SKIP_OK)
#else
#define R_READ_OK (ph[P] == IDLE)
#endif
#define LOSS_OK (lossLeft > 0)
#define DUP_OK (dupLeft > 0 && dOp == 0)

/* a late copy of this write: it carries the entry as sent */
inline makeDup(dup, op) {
  if
  :: dup -> dupLeft--; dOp = op; dR = RI; dCur = 1; V[DVI] = VFRESH; dL = LRD(RI); dH = vHead[P]; dT = vTail[P]
  :: else
  fi
}

/* 1. start (free): the group's free acquire */
inline actStart(lost, dup) {
  MOVED;
  if
  :: START_COND ->
     itok = RTOK; tail++; ilease = LRD(RI); clearReaders(); V[RI] = VFRESH; el[RI] = LRD(RI); newRvn(); res = 1
  :: else -> res = 0
  fi;
  makeDup(dup, W_START);
  if :: lost || dup -> uncertain() :: else fi;
  printf("MSC: p%d (reader) start", P); report(lost);
  if
  :: lost -> lossLeft--; ph[P] = RETRY; rk[P] = W_START
  :: !lost && res -> grem = LRD(RI); rgrant()
  :: else -> rsee(); rresolve()
  fi
}

/* 2. join (free), conditioned on head and tail as seen */
inline actJoin(lost, dup) {
  MOVED;
  if
  :: JOIN_COND(vHead[P], vTail[P], RI) ->
     V[RI] = VFRESH; el[RI] = LRD(RI); LEASE_UP(LRD(RI)); newRvn(); res = 1
  :: else -> res = 0
  fi;
  makeDup(dup, W_JOIN);
  if :: lost || dup -> uncertain() :: else fi;
  printf("MSC: p%d (reader) join at head %d, tail %d", P, vHead[P], vTail[P]); report(lost);
  if
  :: lost -> lossLeft--; ph[P] = RETRY; rk[P] = W_JOIN; uH[P] = vHead[P]; uT[P] = vTail[P]
  :: !lost && res -> grem = LRD(RI); rgrant()
  :: else -> rsee(); rresolve()
  fi
}

/* the retry of a start or join whose answer was lost: the same write again */
inline actRetry() {
  MOVED;
  res = 0;
  if
  :: rk[P] == W_START && START_COND ->
     itok = RTOK; tail++; ilease = LRD(RI); clearReaders(); V[RI] = VFRESH; el[RI] = LRD(RI); newRvn(); res = 1
  :: rk[P] == W_JOIN && JOIN_COND(uH[P], uT[P], RI) ->
     V[RI] = VFRESH; el[RI] = LRD(RI); LEASE_UP(LRD(RI)); newRvn(); res = 1
  :: else
  fi;
  if :: rk[P] == W_START -> printf("MSC: p%d (reader) retries its start", P) :: else -> printf("MSC: p%d (reader) retries its join", P) fi;
  report(0);
  if
  :: res -> grem = LRD(RI); rgrant()
  :: else -> rsee(); rresolve()
  fi
}

/* 3. heartbeat (also the claim of an entry found after its lease): a new entry version, a new record version */
inline rHeartbeatWrite() {
  if
  :: itok == RTOK && V[RI] != 0 -> V[RI] = VFRESH; el[RI] = LRD(RI); LEASE_UP(LRD(RI)); HB_RVN; res = 1
  :: else -> res = 0
  fi
}

inline actRHeartbeat() {
  MOVED;
  hbs[P]++;
  rHeartbeatWrite();
  printf("MSC: p%d (reader) heartbeat", P); report(0);
  if
  :: res -> rem[P] = LRD(RI)
  :: else -> printf("MSC: p%d lost the lock\n", P); rRoundEnd()
  fi
}

inline actRClaim() {
  MOVED;
  rHeartbeatWrite();
  printf("MSC: p%d (reader) heartbeat (claim of its entry)", P); report(0);
  if
  :: res -> grem = LRD(RI); rgrant()
  :: else -> ph[P] = IDLE; rsee(); rresolve()
  fi
}

/* 4./5. release: not last (removes its entry, the record version stays), last (the mutex release) */
inline actRRelease(lost) {
  MOVED;
  hold[P] = 0;
  if
  :: itok == RTOK && V[RI] != 0 ->
     countEntries();
     if
     :: nsz > 1 -> V[RI] = 0; el[RI] = 0; res = 1
     :: else -> releaseHead(); res = 1
     fi
  :: else -> res = 0
  fi;
  printf("MSC: p%d (reader) release", P); report(lost);
  if
  :: lost -> lossLeft--; ph[P] = RELR
  :: else -> rRoundEnd()
  fi
}

/* 6. pass of a dead entry by a waiting reader */
inline actPass(sl) {
  MOVED;
  if
  :: PASS_COND(sl) ->
     countEntries();
     if
     :: nsz > 1 -> V[sl] = 0; el[sl] = 0; newRvn(); res = 1
     :: else -> releaseHead(); res = 2
     fi
  :: else -> res = 0
  fi;
  printf("MSC: p%d (reader) passes the entry in slot %d", P, sl); report(0);
  rsee(); rresolve()
}

#ifndef BUG_RW_READER_NEVER_PASSES_WRITER
inline actRSkip() {
  MOVED;
  if
  :: rvn == sRvn[P] && itok != RTOK ->
     skip_stays_within_queue = (head < tail);
     assert(skip_stays_within_queue);
     releaseHead(); res = 1
  :: else -> res = 0
  fi;
  printf("MSC: p%d (reader) skips the silent head %d", P, vHead[P]); report(0);
  rsee(); rresolve()
}
#endif

active [NR] proctype reader() {
  do
  :: ph[P] == DONE || ph[P] == CRASHED -> break
  :: d_step {
       R_READ_OK ->
       MOVED;
       printf("MSC: p%d (reader) reads: head %d, tail %d, token %d\n", P, head, tail, itok);
       rsee(); rresolve(); canon()
     }
  :: d_step { R_START_OK -> actStart(0, 0); canon() }
  :: d_step { R_START_OK && LOSS_OK -> actStart(1, 0); canon() }
  :: d_step { R_START_OK && DUP_OK -> actStart(0, 1); canon() }
  :: d_step { ph[P] == IDLE && R_START_VIEW && tail >= MAXT -> MOVED; outOfBounds(); canon() }
  :: d_step { R_JOIN_OK -> actJoin(0, 0); canon() }
  :: d_step { R_JOIN_OK && LOSS_OK -> actJoin(1, 0); canon() }
  :: d_step { R_JOIN_OK && DUP_OK -> actJoin(0, 1); canon() }
  :: d_step { ph[P] == RETRY -> actRetry(); canon() }
  :: d_step { ph[P] == CLAIMP -> actRClaim(); canon() }
  :: d_step { ph[P] == HOLD && rem[P] > 0 && hbs[P] < HBS -> actRHeartbeat(); canon() }
  :: d_step { ph[P] == HOLD -> actRRelease(0); canon() }
  :: d_step { ph[P] == HOLD && LOSS_OK -> actRRelease(1); canon() }
  :: d_step { ph[P] == RELR -> actRRelease(0); canon() }
  :: d_step { R_PASS_OK(0) -> actPass(0); canon() }
  :: d_step { R_PASS_OK(1) -> actPass(1); canon() }
  :: d_step { R_PASS_OK(2) -> actPass(2); canon() }
#ifndef BUG_RW_READER_NEVER_PASSES_WRITER
  :: d_step { R_SKIP_OK -> actRSkip(); canon() }
#endif
  :: d_step { ph[P] == HOLD && rem[P] > 0 && crashLeft > 0 -> crashLeft--; crash(); canon() }
  od
}

#ifdef LIVE
/* a process that keeps running takes at least one step between two ticks */
#define CLOCK_MAY_TICK (wdone + rdone + ncrash < NP && nmoved + wdone + rdone + ncrash == NP)
#else
#define CLOCK_MAY_TICK (wdone + rdone + ncrash < NP)
#endif

/* true time: every tick, leases run down and watches grow, for every process alike */
active proctype clock() {
end:
  do
  :: d_step {
       CLOCK_MAY_TICK ->
       for (q : 0 .. NP - 1) {
         if :: rem[q] > 0 -> rem[q]-- :: else fi;
         if :: unc[q] && na[q] < LP(q) -> na[q]++ :: else fi;
         if :: q < NW && ph[q] != DONE && nh[q] < LCQ -> nh[q]++ :: else fi;
         if :: sAge[q] < sP[q] -> sAge[q]++ :: else fi
#ifdef LIVE
         ; moved[q] = 0
#endif
       }
       for (k : 0 .. NR * NS - 1) {
         if :: wAge[k] < wP[k] -> wAge[k]++ :: else fi
       }
#ifdef LIVE
       ; nmoved = 0
#endif
       ; printf("MSC: tick\n")
     }
  od
}

/* the network: a late copy of a reader's start or join is applied later (or never) */
active proctype net() {
end:
  do
  :: d_step {
       dOp != 0 && (dOp == W_JOIN || tail < MAXT) ->
       slot = (dCur -> dR : GS);
       res = 0;
       if
       :: dOp == W_START && START_COND ->
          itok = RTOK; tail++; ilease = dL; clearReaders(); res = 1
       :: dOp == W_JOIN && JOIN_COND(dH, dT, slot) ->
          LEASE_UP(dL); res = 1
       :: else
       fi;
       if
       :: res ->
          V[slot] = V[DVI]; el[slot] = dL; newRvn();
          /* an entry of an older acquisition: a reader that watched it then may pass it by that watch */
          if
          :: slot == GS ->
             for (q : 0 .. NR - 1) {
               if
               :: V[WI(q, dR)] == V[DVI] ->
                  V[WI(q, GS)] = V[DVI]; wAge[WX(q, GS)] = wAge[WX(q, dR)]; wP[WX(q, GS)] = wP[WX(q, dR)]
               :: else
               fi
             }
          :: else
          fi
       :: else
       fi;
       if :: dOp == W_START -> printf("MSC: late copy of p%d's start", dR + NW) :: else -> printf("MSC: late copy of p%d's join", dR + NW) fi;
       report(0);
       dOp = 0; dR = 0; dCur = 0; dL = 0; dH = 0; dT = 0; V[DVI] = 0;
       canon()
     }
  od
}

#ifdef LIVE
#ifdef LIVE_READERS
ltl every_reader_served { <> (rdone + rcrash == NR) }
#else
ltl writers_served { <> (wdone == NW) }
#endif
#endif
